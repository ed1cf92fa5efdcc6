// What `taskledger mcp-proxy` tells operators besides the ledger: one JSON
// line per gated call (--log-calls), Prometheus counters served while it
// runs (--metrics) and the audit page written at the end (--audit-html),
// checked against the binary on stdio in front of the fake
// server, on a memory store.
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "proxy_process.h"
#include "taskledger/http/client.h"

namespace taskledger {
namespace {

using nlohmann::json;
using testing::FreshDir;
using testing::ProxyProcess;
namespace fs = std::filesystem;

// The metrics URL the proxy printed on stderr ("metrics on http://...").
std::string MetricsUrl(const ProxyProcess& proxy) {
  for (int i = 0; i < 200; ++i) {
    const std::string err = proxy.Stderr();
    const std::string mark = "metrics on ";
    if (auto at = err.find(mark); at != std::string::npos) {
      auto end = err.find('\n', at);
      if (end != std::string::npos) return err.substr(at + mark.size(), end - at - mark.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  FAIL("no metrics line on the proxy's stderr: " << proxy.Stderr());
  return {};
}

// The value of the sample `name` in Prometheus text, or -1.
double Sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

TEST_CASE("mcp-proxy --log-calls, --metrics and --audit-html report every gated call", "[mcp]") {
  fs::path dir = FreshDir("observe");
  const fs::path log = dir / "calls.jsonl";
  const fs::path page = dir / "audit.html";
  ProxyProcess proxy(dir, {"--log-calls", log.string(), "--metrics", "127.0.0.1:0", "--audit-html",
                           page.string()});
  const std::string url = MetricsUrl(proxy);
  REQUIRE(url.rfind("http://127.0.0.1:", 0) == 0);
  proxy.Initialize();
  CHECK(proxy.Call(1, "echo", {{"value", "kiwi"}})["result"]["isError"] == false);
  CHECK(proxy.Call(2, "touch", {{"path", (dir / "ok.txt").string()}})["result"]["isError"] ==
        false);
  CHECK(proxy.Call(3, "touch", {{"path", (dir / "forbidden").string()}})["result"]["isError"] ==
        true);
  CHECK(proxy.Call(4, "publish", {{"path", (dir / "held").string()}})["result"]["isError"] == true);

  // Scraped while the proxy runs: counters kept in process.
  const std::string base = url.substr(0, url.find("/metrics"));
  auto client = http::Client::Open(base);
  REQUIRE(client.has_value());
  auto scraped = (*client)->Send("GET", "/metrics", {}, "", "");
  REQUIRE(scraped.has_value());
  CHECK(scraped->status == 200);
  CHECK(scraped->Header("Content-Type").rfind("text/plain", 0) == 0);
  const std::string& text = scraped->body;
  CHECK(Sample(text, "taskledger_mcp_calls_total{decision=\"allow\"}") == 2);
  CHECK(Sample(text, "taskledger_mcp_calls_total{decision=\"deny\"}") == 1);
  CHECK(Sample(text, "taskledger_mcp_calls_total{decision=\"require_approval\"}") == 1);
  CHECK(Sample(text, "taskledger_mcp_calls_forwarded_total") == 2);
  CHECK(Sample(text, "taskledger_mcp_calls_uncertain_total") == 0);
  CHECK(Sample(text, "taskledger_mcp_call_duration_seconds_count") == 4);
  CHECK(Sample(text, "taskledger_mcp_call_duration_seconds_bucket{le=\"+Inf\"}") == 4);
  CHECK(proxy.Finish() == 0);

  // The memory store's decisions outlive the process in the audit page.
  const std::string html = testing::ReadAll(page);
  CHECK(html.find("class=\"conversation") != std::string::npos);
  CHECK(html.find("fake.no_forbidden") != std::string::npos);
  CHECK(html.find("fake.needs_approval") != std::string::npos);

  std::vector<json> records;
  std::istringstream lines(testing::ReadAll(log));
  for (std::string line; std::getline(lines, line);) records.push_back(json::parse(line));
  REQUIRE(records.size() == 4);
  CHECK(records[0]["tool"] == "echo");
  CHECK(records[0]["decision"] == "allow");
  CHECK(records[0]["forwarded"] == true);
  CHECK(records[1]["tool"] == "touch");
  CHECK(records[1]["command_state"] == "succeeded");
  CHECK(records[1]["executed"] == true);
  CHECK(records[2]["decision"] == "deny");
  CHECK(records[2]["rule"] == "fake.no_forbidden");
  CHECK(records[2]["forwarded"] == false);
  CHECK(records[3]["decision"] == "require_approval");
  CHECK(records[3]["command_state"] == "blocked");
  for (const json& r : records) {
    CHECK(r["conversation"].get<std::string>().rfind("mcp-", 0) == 0);
    CHECK(r["latency_us"].get<int64_t>() > 0);
    CHECK(r.contains("call_id"));
    CHECK(r.contains("ts_ms"));
  }
}

TEST_CASE("mcp-proxy refuses a --log-calls file it cannot open and a bad --metrics address",
          "[mcp]") {
  fs::path dir = FreshDir("observe-bad");
  {
    ProxyProcess proxy(dir, {"--log-calls", (dir / "no" / "such" / "dir.jsonl").string()});
    CHECK(proxy.Finish() == 2);
    CHECK(proxy.Stderr().find("--log-calls") != std::string::npos);
  }
  ProxyProcess proxy(dir, {"--metrics", "127.0.0.1:notaport"});
  CHECK(proxy.Finish() == 2);
  CHECK(proxy.Stderr().find("--metrics must be HOST:PORT") != std::string::npos);
}

}  // namespace
}  // namespace taskledger
