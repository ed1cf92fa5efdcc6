// SIGHUP reloads the pack of `taskledger serve --rules DIR`: new proposals
// are decided by the new pack and name its version; a pack that no longer
// loads keeps the old one serving, and stderr says why.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "serve_process.h"

namespace taskledger::serve_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void Replace(const fs::path& file, const std::string& from, const std::string& to) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  s.replace(at, from.size(), to);
  std::ofstream(file, std::ios::trunc) << s;
}

}  // namespace

TEST_CASE("serve: SIGHUP reloads the pack; a broken one keeps the old serving", "[serve]") {
  fs::path dir = fs::temp_directory_path() / ("tl-serve-reload-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription", dir,
           fs::copy_options::recursive);
  ServeProcess s({"--rules", dir.string()});
  const json cancel = {
      {"conversation", "r"},
      {"call", {{"id", "1"}, {"tool", "cancel_subscription"}, {"arguments", {{"id", "S"}}}}}};
  Reply before = s.Post("/v1/propose", cancel);
  REQUIRE(before.status == 200);
  const std::string v1 = before.body["decision"]["pack_version"];
  CHECK(before.body["decision"]["reason"].get<std::string>().find("(v2)") == std::string::npos);

  Replace(dir / "policy.lua", "the customer's identity has not been verified",
          "the customer's identity has not been verified (v2)");
  s.Signal(SIGHUP);
  REQUIRE(s.WaitForStderr("taskledger serve: reloaded", 10'000));
  Reply after = s.Post("/v1/propose", cancel);
  REQUIRE(after.status == 200);
  const std::string v2 = after.body["decision"]["pack_version"];
  CHECK(v2 != v1);
  CHECK(after.body["decision"]["reason"].get<std::string>().find("(v2)") != std::string::npos);
  CHECK(after.body["decision_record"]["pack_version"] == v2);

  std::ofstream(dir / "policy.lua", std::ios::trunc) << "this is not lua (\n";
  s.Signal(SIGHUP);
  REQUIRE(s.WaitForStderr("failed, still serving pack subscription " + v2, 10'000));
  Reply broken = s.Post("/v1/propose", cancel);
  REQUIRE(broken.status == 200);
  CHECK(broken.body["decision"]["pack_version"] == v2);
  CHECK(broken.body["decision"]["outcome"] == "deny");
  Reply metrics = s.Send("GET", "/metrics", "");
  CHECK(metrics.raw.find("taskledger_serve_pack_reloads_total{result=\"ok\"} 1") !=
        std::string::npos);
  CHECK(metrics.raw.find("taskledger_serve_pack_reloads_total{result=\"failed\"} 1") !=
        std::string::npos);
  CHECK(metrics.raw.find("version=\"" + v2 + "\"") != std::string::npos);
  CHECK(s.Stop() == 0);
  fs::remove_all(dir);
}

}  // namespace taskledger::serve_test
