// `taskledger serve --tenants FILE` through the real binary: two tenants with
// packs of their own get different decisions for the same call, each naming
// its pack; a tenant without one gets the default pack; SIGHUP reloads every
// pack, and one that no longer loads keeps its old version serving (stderr
// and /readyz say why) while the others switch; SIGHUP also reads the
// tenants file again: tenants added, dropped, or whose new pack never loaded.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "serve_process.h"
#include "taskledger/base/digest.h"

namespace taskledger::serve_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kAcme = "acme-token-0123456789";
const char* kGlobex = "globex-token-9876543210";
const char* kInitech = "initech-token-abcdef";

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

// A fresh folder `name` under the temp dir holding two copies of the
// subscription pack: strict/ as it is, lenient/ named subscription-lenient
// and letting a change through without a verified identity.
fs::path MakeTenantPacks(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string source = std::string(TASKLEDGER_SOURCE_DIR) + "/rules/subscription";
  fs::copy(source, dir / "strict", fs::copy_options::recursive);
  fs::copy(source, dir / "lenient", fs::copy_options::recursive);
  Replace(dir / "lenient" / "pack.json", "\"subscription\"", "\"subscription-lenient\"");
  Replace(dir / "lenient" / "policy.lua", "if ledger.condition(\"identity_verified\") == true",
          "if true or ledger.condition(\"identity_verified\") == true");
  return dir;
}

}  // namespace

TEST_CASE("serve: tenants run under their own packs, and SIGHUP reloads each", "[serve]") {
  const fs::path dir = MakeTenantPacks("tl-serve-tenants");
  {
    std::ofstream tenants(dir / "tenants");
    tenants << "# tenant  own pack (relative to this file)\n"
            << "acme rules=strict\n"
            << "globex rules=lenient time-limit-ms=60000\n";
    std::ofstream tokens(dir / "tokens");
    tokens << "acme " << Sha256Hex(kAcme) << "\nglobex " << Sha256Hex(kGlobex) << "\ninitech "
           << Sha256Hex(kInitech) << "\n";
  }
  ServeProcess s({"--tenants", (dir / "tenants").string(), "--tokens", (dir / "tokens").string()});
  CHECK(s.listening_line().find("2 tenants") != std::string::npos);

  const json cancel = {
      {"conversation", "c1"},
      {"call", {{"id", "1"}, {"tool", "cancel_subscription"}, {"arguments", {{"id", "S"}}}}}};
  Reply acme = s.Post("/v1/propose", cancel, kAcme);
  REQUIRE(acme.status == 200);
  CHECK(acme.body["decision"]["outcome"] == "deny");
  CHECK(acme.body["decision"]["rule_id"] == "subscription.identity_verified");
  CHECK(acme.body["decision"]["pack_name"] == "subscription");
  const std::string acme_v1 = acme.body["decision"]["pack_version"];

  Reply globex = s.Post("/v1/propose", cancel, kGlobex);
  REQUIRE(globex.status == 200);
  CHECK(globex.body["decision"]["outcome"] == "allow");
  CHECK(globex.body["execute"] == true);
  CHECK(globex.body["command"]["state"] == "leased");
  CHECK(globex.body["decision"]["pack_name"] == "subscription-lenient");
  const std::string globex_v1 = globex.body["decision"]["pack_version"];
  CHECK(globex_v1 != acme_v1);
  CHECK(globex.body["decision_record"]["pack_version"] == globex_v1);

  // No pack of its own and no --rules: the built-in pack denies every tool.
  Reply initech = s.Post("/v1/propose", cancel, kInitech);
  REQUIRE(initech.status == 200);
  CHECK(initech.body["decision"]["outcome"] == "deny");
  CHECK(initech.body["decision"]["pack_name"] == "serve-default");

  // acme's pack changes, globex's breaks: acme switches, globex keeps v1.
  Replace(dir / "strict" / "policy.lua", "the customer's identity has not been verified",
          "the customer's identity has not been verified (v2)");
  std::ofstream(dir / "lenient" / "policy.lua", std::ios::trunc) << "this is not lua (\n";
  s.Signal(SIGHUP);
  REQUIRE(
      s.WaitForStderr("lenient (tenant globex) failed, still serving pack "
                      "subscription-lenient " +
                          globex_v1,
                      10'000));
  REQUIRE(s.WaitForStderr("strict (tenant acme): pack subscription", 10'000));

  const json cancel2 = {
      {"conversation", "c2"},
      {"call", {{"id", "1"}, {"tool", "cancel_subscription"}, {"arguments", {{"id", "S"}}}}}};
  Reply acme2 = s.Post("/v1/propose", cancel2, kAcme);
  REQUIRE(acme2.status == 200);
  CHECK(acme2.body["decision"]["pack_version"] != acme_v1);
  CHECK(acme2.body["decision"]["reason"].get<std::string>().find("(v2)") != std::string::npos);
  Reply globex2 = s.Post("/v1/propose", cancel2, kGlobex);
  REQUIRE(globex2.status == 200);
  CHECK(globex2.body["decision"]["outcome"] == "allow");
  CHECK(globex2.body["decision"]["pack_version"] == globex_v1);

  Reply ready = s.Send("GET", "/readyz", "");
  REQUIRE(ready.status == 200);
  bool saw_error = false;
  for (const json& p : ready.body["packs"]) {
    if (p.value("tenant", "") == "globex") {
      CHECK(p["version"] == globex_v1);
      saw_error = p.contains("reload_error");
    } else {
      CHECK_FALSE(p.contains("reload_error"));
    }
  }
  CHECK(saw_error);
  Reply metrics = s.Send("GET", "/metrics", "");
  CHECK(metrics.raw.find("tenant=\"globex\"") != std::string::npos);
  CHECK(metrics.raw.find("taskledger_serve_pack_reloads_total{result=\"failed\"} 1") !=
        std::string::npos);
  CHECK(s.Stop() == 0);
  fs::remove_all(dir);
}

TEST_CASE("serve: SIGHUP reads the tenants file again", "[serve]") {
  const fs::path dir = MakeTenantPacks("tl-serve-retenants");
  std::ofstream(dir / "tenants") << "acme rules=strict\n";
  std::ofstream(dir / "tokens") << "acme " << Sha256Hex(kAcme) << "\nglobex " << Sha256Hex(kGlobex)
                                << "\ninitech " << Sha256Hex(kInitech) << "\n";
  ServeProcess s({"--tenants", (dir / "tenants").string(), "--tokens", (dir / "tokens").string()});
  int conversation = 0;
  auto propose = [&](const char* token) {
    const json cancel = {
        {"conversation", "c" + std::to_string(++conversation)},
        {"call", {{"id", "1"}, {"tool", "cancel_subscription"}, {"arguments", {{"id", "S"}}}}}};
    return s.Post("/v1/propose", cancel, token);
  };
  // Waits until stderr holds `needle` `times` times (each SIGHUP prints its lines again).
  auto wait_for = [&](const std::string& needle, size_t times) {
    for (int tries = 0; tries < 200; ++tries) {
      const std::string err = s.Stderr();
      size_t seen = 0;
      for (size_t at = err.find(needle); at != std::string::npos; at = err.find(needle, at + 1)) {
        ++seen;
      }
      if (seen >= times) return true;
      (void)s.WaitForStderr("\x01 not printed", 50);
    }
    return false;
  };
  REQUIRE(propose(kAcme).body["decision"]["pack_name"] == "subscription");
  REQUIRE(propose(kGlobex).body["decision"]["pack_name"] == "serve-default");

  // acme is dropped, globex gains a pack, initech's pack is not there.
  std::ofstream(dir / "tenants", std::ios::trunc)
      << "globex rules=lenient time-limit-ms=60000\ninitech rules=missing\n";
  s.Signal(SIGHUP);
  REQUIRE(wait_for("lenient (tenant globex): pack subscription-lenient", 1));
  REQUIRE(wait_for("missing (tenant initech) failed; its requests are refused", 1));
  Reply acme = propose(kAcme);
  REQUIRE(acme.status == 200);
  CHECK(acme.body["decision"]["pack_name"] == "serve-default");
  CHECK(acme.body["decision"]["outcome"] == "deny");
  Reply globex = propose(kGlobex);
  REQUIRE(globex.status == 200);
  CHECK(globex.body["decision"]["pack_name"] == "subscription-lenient");
  CHECK(globex.body["decision"]["outcome"] == "allow");
  // Never the default pack in place of a pack that did not load.
  Reply initech = propose(kInitech);
  CHECK(initech.status == 503);
  CHECK(initech.body["error"]["code"] == "pack_unavailable");
  Reply ready = s.Send("GET", "/readyz", "");
  bool initech_listed = false;
  for (const json& p : ready.body["packs"]) {
    if (p.value("tenant", "") != "initech") continue;
    initech_listed = true;
    CHECK(p.contains("reload_error"));
  }
  CHECK(initech_listed);

  // A file that no longer reads keeps the tenants as they were.
  std::ofstream(dir / "tenants", std::ios::trunc) << "globex packs=lenient\n";
  s.Signal(SIGHUP);
  REQUIRE(wait_for("the tenants stay as they were", 1));
  REQUIRE(wait_for("missing (tenant initech) failed; its requests are refused", 2));
  CHECK(propose(kGlobex).body["decision"]["pack_name"] == "subscription-lenient");
  CHECK(propose(kInitech).status == 503);

  // initech's pack appears: the next SIGHUP loads it.
  std::ofstream(dir / "tenants", std::ios::trunc) << "initech rules=strict\n";
  s.Signal(SIGHUP);
  REQUIRE(wait_for("strict (tenant initech): pack subscription", 1));
  Reply later = propose(kInitech);
  REQUIRE(later.status == 200);
  CHECK(later.body["decision"]["pack_name"] == "subscription");
  CHECK(propose(kGlobex).body["decision"]["pack_name"] == "serve-default");
  CHECK(s.Stop() == 0);
  fs::remove_all(dir);
}

TEST_CASE("serve: a malformed tenants file is refused at start", "[serve]") {
  fs::path p = fs::temp_directory_path() / ("tl-serve-badtenants-" + std::to_string(::getpid()));
  std::ofstream(p) << "acme packs=/nowhere\n";
  std::string err;
  CHECK(RunServeToExit({"--tenants", p.string()}, err) == 2);
  CHECK(err.find("TENANT [rules=DIR] [time-limit-ms=N]") != std::string::npos);
  std::ofstream(p, std::ios::trunc) << "acme rules=/no/such/pack\n";
  CHECK(RunServeToExit({"--tenants", p.string()}, err) == 2);
  CHECK(err.find("tenant acme") != std::string::npos);
  fs::remove(p);
}

}  // namespace taskledger::serve_test
