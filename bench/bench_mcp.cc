// bench_mcp: what the MCP gating proxy adds to a read-only tools/call, over
// stdio and over Streamable HTTP, against calling the same trivial server
// directly, in one run, interleaved.
//
// The server is this binary run with --serve: an MCP server on stdio whose
// one tool, echo, answers its arguments at once. Per round, one call each:
// - direct: a client writes the tools/call to the server's stdin and reads
//   the answer from its stdout;
// - stdio: the same through a GatingProxy (in process, its client side one
//   end of a socketpair) in front of its own copy of the server: the gate
//   (read-only: no rule runs), the forward, the extraction and the turn's
//   commit on a memory store;
// - http: the same through an HttpListener on loopback (POST with the
//   session's Mcp-Session-Id, keep-alive, JSON answer), whose session's proxy
//   runs its own server on stdio.
// added = proxied - direct per round, so the machine's load on that round
// counts on both sides; p50 and p99 of those differences.
//
// Usage: bench_mcp [--samples N] [--warmup N]
// The last line of output is one JSON object:
// {"direct_p50_us":..,"stdio_p50_us":..,"stdio_added_p50_us":..,"stdio_added_p99_us":..,
//  "http_p50_us":..,"http_added_p50_us":..,"http_added_p99_us":..,"samples":..}
// Goal (issue #21): stdio_added_p50_us <= 150.
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "taskledger/commands/memory_command_store.h"
#include "taskledger/http/client.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/mcp_proxy/http_listener.h"
#include "taskledger/mcp_proxy/proxy.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/session/session.h"

extern char** environ;

using namespace taskledger;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

namespace {

// --- the trivial server -------------------------------------------------

int Serve() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    json msg = json::parse(line, nullptr, false);
    if (!msg.is_object() || !msg.contains("id") || !msg.contains("method")) continue;
    const std::string method = msg["method"].get<std::string>();
    json result = json::object();
    if (method == "initialize") {
      result = {{"protocolVersion", "2025-06-18"},
                {"capabilities", {{"tools", json::object()}}},
                {"serverInfo", {{"name", "bench", "version", "1"}}}};
    } else if (method == "tools/list") {
      result = {
          {"tools", json::array({{{"name", "echo"}, {"inputSchema", {{"type", "object"}}}}})}};
    } else if (method == "tools/call") {
      const json& args = msg["params"]["arguments"];
      result = {{"content", json::array({{{"type", "text"}, {"text", args.dump()}}})},
                {"structuredContent", {{"echo", args}}},
                {"isError", false}};
    }
    std::cout << json{{"jsonrpc", "2.0"}, {"id", msg["id"]}, {"result", result}}.dump() << "\n"
              << std::flush;
  }
  return 0;
}

// --- line I/O on blocking descriptors -------------------------------------

class LineChannel {
 public:
  LineChannel(int in, int out) : in_(in), out_(out) {}
  void Send(const std::string& line) {
    std::string data = line + "\n";
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(out_, data.data() + off, data.size() - off);
      if (n <= 0) Die("write failed");
      off += static_cast<size_t>(n);
    }
  }
  std::string Receive() {
    while (true) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      char chunk[65536];
      ssize_t n = ::read(in_, chunk, sizeof chunk);
      if (n <= 0) Die("read failed");
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  static void Die(const char* why) {
    std::fprintf(stderr, "bench_mcp: %s: %s\n", why, std::strerror(errno));
    std::exit(1);
  }

 private:
  int in_, out_;
  std::string buf_;
};

std::string CallLine(int id) {
  return json{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "tools/call"},
      {"params", {{"name", "echo"}, {"arguments", {{"value", "kiwi-" + std::to_string(id)}}}}}}
      .dump();
}

const std::string kInitialize = json{{"jsonrpc", "2.0"},
                                     {"id", 0},
                                     {"method", "initialize"},
                                     {"params",
                                      {{"protocolVersion", "2025-06-18"},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "bench", "version", "1"}}}}}}
                                    .dump();

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[idx];
}

double Us(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::shared_ptr<const RulePack> Pack() {
  auto pack = RulePack::FromFiles(
      {{"pack.json", R"({"name": "bench", "tools": {"read_only": ["echo"], "writes": []}})"},
       {"extract.json", R"({"tools": {"echo": [{"id": "echo.value", "path": "/echo/value",
                           "category": "fact", "key": "echoed"}]}})"},
       {"policy.lua", ""}});
  if (!pack) {
    std::fprintf(stderr, "bench_mcp: pack: %s\n", pack.error().ToString().c_str());
    std::exit(1);
  }
  return std::move(pack).value();
}

std::unique_ptr<Session> OpenSession(Store& store, CommandStore& commands, const std::string& id) {
  SessionOptions options;
  options.commands = mcp::McpCommandOptions(commands, RunId{"bench", id}, "bench-" + id);
  auto session = Session::Open(store, ConversationId{"bench", id}, Pack(), options);
  if (!session) {
    std::fprintf(stderr, "bench_mcp: session: %s\n", session.error().ToString().c_str());
    std::exit(1);
  }
  return std::move(session).value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--serve") return Serve();
  int samples = 2000, warmup = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--samples") samples = std::atoi(argv[i + 1]);
    if (flag == "--warmup") warmup = std::atoi(argv[i + 1]);
  }
  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) LineChannel::Die("readlink /proc/self/exe");
  self[len] = '\0';
  const std::vector<std::string> server = {self, "--serve"};

  // Direct: the server as a child on pipes.
  int to_server[2], from_server[2];
  if (::pipe2(to_server, O_CLOEXEC) != 0 || ::pipe2(from_server, O_CLOEXEC) != 0) {
    LineChannel::Die("pipe2");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_server[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_server[1], STDOUT_FILENO);
  char* child_argv[] = {self, const_cast<char*>("--serve"), nullptr};
  pid_t direct_pid = 0;
  if (::posix_spawn(&direct_pid, self, &actions, nullptr, child_argv, environ) != 0) {
    LineChannel::Die("posix_spawn");
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_server[0]);
  ::close(from_server[1]);
  LineChannel direct(from_server[0], to_server[1]);
  direct.Send(kInitialize);
  direct.Receive();

  // Stdio: a GatingProxy on a socketpair in front of its own server.
  auto store = NewMemoryStore();
  auto commands = NewMemoryCommandStore();
  auto stdio_session = OpenSession(*store, *commands, "stdio");
  mcp::ProxyOptions proxy_options;
  proxy_options.server_command = server;
  proxy_options.log = [](std::string_view) {};
  mcp::GatingProxy proxy(*stdio_session, proxy_options);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    LineChannel::Die("socketpair");
  std::thread proxy_thread([&] { (void)proxy.Run(pair[1], pair[1]); });
  LineChannel stdio(pair[0], pair[0]);
  stdio.Send(kInitialize);
  stdio.Receive();

  // HTTP: a listener whose sessions each run a proxy and a server.
  mcp::ListenerOptions listen;
  listen.log = [](std::string_view) {};
  mcp::HttpListener listener(listen, [&](const std::string& id, const std::string&) {
    mcp::GatedSession parts;
    parts.session = OpenSession(*store, *commands, "http-" + id);
    parts.options = proxy_options;
    return Result<mcp::GatedSession>(std::move(parts));
  });
  auto port = listener.Bind();
  if (!port) LineChannel::Die("bind");
  std::thread serving([&] { (void)listener.Serve(); });
  auto client = http::Client::Open("http://127.0.0.1:" + std::to_string(*port));
  if (!client) LineChannel::Die("http client");
  http::Headers accept = {{"Accept", "application/json"}};
  auto init = (*client)->Send("POST", "/mcp", accept, kInitialize, "application/json");
  if (!init || init->status != 200) LineChannel::Die("http initialize");
  http::Headers in_session = accept;
  in_session.emplace_back("Mcp-Session-Id", init->Header("Mcp-Session-Id"));

  std::vector<double> direct_us, stdio_us, http_us, stdio_added, http_added;
  for (int i = 1; i <= warmup + samples; ++i) {
    const std::string line = CallLine(i);
    auto t0 = Steady::now();
    direct.Send(line);
    direct.Receive();
    auto t1 = Steady::now();
    stdio.Send(line);
    stdio.Receive();
    auto t2 = Steady::now();
    auto r = (*client)->Send("POST", "/mcp", in_session, line, "application/json");
    auto t3 = Steady::now();
    if (!r || r->status != 200 || r->body.find("kiwi-") == std::string::npos) {
      LineChannel::Die("http call");
    }
    if (i <= warmup) continue;
    direct_us.push_back(Us(t0, t1));
    stdio_us.push_back(Us(t1, t2));
    http_us.push_back(Us(t2, t3));
    stdio_added.push_back(Us(t1, t2) - Us(t0, t1));
    http_added.push_back(Us(t2, t3) - Us(t0, t1));
  }

  ::shutdown(pair[0], SHUT_RDWR);
  proxy_thread.join();
  listener.Stop();
  serving.join();
  ::close(to_server[1]);
  ::waitpid(direct_pid, nullptr, 0);

  std::printf("direct   p50 %8.1f us  p99 %8.1f us\n", Percentile(direct_us, 0.5),
              Percentile(direct_us, 0.99));
  std::printf("stdio    p50 %8.1f us  p99 %8.1f us  added p50 %8.1f  p99 %8.1f\n",
              Percentile(stdio_us, 0.5), Percentile(stdio_us, 0.99), Percentile(stdio_added, 0.5),
              Percentile(stdio_added, 0.99));
  std::printf("http     p50 %8.1f us  p99 %8.1f us  added p50 %8.1f  p99 %8.1f\n",
              Percentile(http_us, 0.5), Percentile(http_us, 0.99), Percentile(http_added, 0.5),
              Percentile(http_added, 0.99));
  json out = {{"direct_p50_us", Percentile(direct_us, 0.5)},
              {"stdio_p50_us", Percentile(stdio_us, 0.5)},
              {"stdio_added_p50_us", Percentile(stdio_added, 0.5)},
              {"stdio_added_p99_us", Percentile(stdio_added, 0.99)},
              {"http_p50_us", Percentile(http_us, 0.5)},
              {"http_added_p50_us", Percentile(http_added, 0.5)},
              {"http_added_p99_us", Percentile(http_added, 0.99)},
              {"samples", samples}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
