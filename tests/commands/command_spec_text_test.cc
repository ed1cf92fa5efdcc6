// WriteCommandSpec (commands/src/internal/command_spec_text.h) writes the
// spec text a Redis command hash stores without building a JSON tree. Its
// full spelling must give exactly the bytes DumpLossless(EncodeCommand(c))
// gives (what earlier releases stored), for every member and every kind of
// string and number; its compact spelling (what the store writes now) must
// decode to the same Command with the members holding defaults left out.
// Both refuse exactly where DumpLossless refuses (invalid UTF-8, a
// non-finite number), so the caller falls back the same way.
// Single-threaded.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "internal/command_redis_decode.h"
#include "internal/command_spec_text.h"

namespace taskledger::testing {
namespace {

std::string TreeText(const Command& c) {
  std::string text;
  REQUIRE(internal::DumpLossless(EncodeCommand(c), text));
  return text;
}

std::string Written(const Command& c,
                    internal::SpecSpelling spelling = internal::SpecSpelling::kFull) {
  std::string text;
  REQUIRE(internal::WriteCommandSpec(c, spelling, text));
  return text;
}

std::string Compact(const Command& c) { return Written(c, internal::SpecSpelling::kCompact); }

// The command each spelling's text decodes to: both must be `c`.
void CheckBothDecodeTo(const Command& c) {
  for (const std::string& text : {Written(c), Compact(c)}) {
    INFO("spec text " << text);
    auto decoded = DecodeCommand(nlohmann::json::parse(text));
    REQUIRE(decoded.has_value());
    CHECK(*decoded == c);
  }
}

Command Sample() {
  auto c = NewCommand(SpecFor(FreshRun("spec-text"), "step-1"), kNow);
  REQUIRE(c.has_value());
  return *c;
}

}  // namespace

TEST_CASE("command spec text: written directly, it is the tree's text byte for byte",
          "[commands]") {
  Command c = Sample();
  CHECK(Written(c) == TreeText(c));
  // DecodeCommand of that text is the command itself (what the store's spec
  // cache remembers for it without parsing).
  auto decoded = DecodeCommand(nlohmann::json::parse(Written(c)));
  REQUIRE(decoded.has_value());
  CHECK(*decoded == c);

  SECTION("every mutable member set, a compensation, evidence") {
    c.state = CommandState::kSucceeded;
    c.seq = 18446744073709551615ULL;
    c.attempts = 4294967295U;
    c.fencing_token = 7;
    c.lease_owner = "worker \"a\"";
    c.lease_expires_ms = -1;
    c.last_error = "line 1\nline 2\ttab\\";
    c.external_id = "ext-1";
    c.evidence = {{"ok", true}, {"n", nullptr}, {"list", {1, -2, 3.25}}};
    c.approver = "alice";
    c.approval_reason = "fine";
    c.escalated = true;
    c.escalation_reason = "gave up";
    c.cancel_reason = "bob: no";
    c.replays = 3;
    c.replay_reason = "carol: again";
    c.completed_seq = 9;
    c.updated_ms = kNow + 5;
    c.compensates = "other|key";
    c.compensation = CompensationSpec{"refund", "order:1", {{"amount", 12.5}, {"why", "undo"}}};
    c.pack_version = "";
    CHECK(Written(c) == TreeText(c));
    CheckBothDecodeTo(c);
  }
  SECTION("strings with every escape, control bytes, DEL and multi-byte UTF-8") {
    std::string odd = "q\" b\\ \b\f\n\r\t";
    for (char ch = 1; ch < 0x20; ++ch) odd += ch;
    odd += std::string(1, '\0') + "\x7f" + "é € 𝄞 " + "\xef\xbf\xbf";
    c.step = odd;
    c.target = odd;
    c.tool = "tool/" + odd;
    c.run.tenant = "t{:}" + odd;
    c.decision = {{"reason", odd}, {odd, {odd, 1}}};
    c.arguments = {{"s", odd},
                   {"max", std::numeric_limits<int64_t>::max()},
                   {"min", std::numeric_limits<int64_t>::min()},
                   {"f", 0.1},
                   {"e", 1e300}};
    CHECK(Written(c) == TreeText(c));
    CheckBothDecodeTo(c);
  }
  SECTION("an empty compensation and empty strings throughout") {
    c.compensation = CompensationSpec{};
    c.step = c.tool = c.target = c.idempotency_key = "";
    CHECK(Written(c) == TreeText(c));
    CheckBothDecodeTo(c);
  }
}

TEST_CASE("command spec text: the compact spelling leaves out defaults and decodes the same",
          "[commands]") {
  Command c = Sample();
  SECTION("a reservation: only what the call is, none of its mutable attributes") {
    const nlohmann::json compact = nlohmann::json::parse(Compact(c));
    std::vector<std::string> keys;
    for (const auto& [key, value] : compact.items()) keys.push_back(key);
    CHECK(keys == std::vector<std::string>{"arguments", "command_key", "created_ms", "decision",
                                           "idempotency_key", "pack_version", "run", "state",
                                           "step", "target", "tenant", "tool", "updated_ms"});
    // What is left is the full text's, member for member.
    const nlohmann::json full = nlohmann::json::parse(Written(c));
    for (const auto& [key, value] : compact.items()) CHECK(full.at(key) == value);
    CHECK(Written(c).size() - Compact(c).size() > 250);
    CheckBothDecodeTo(c);
  }
  SECTION("a blocked command keeps its state") {
    c.state = CommandState::kBlocked;
    CHECK(nlohmann::json::parse(Compact(c))["state"] == "blocked");
    CheckBothDecodeTo(c);
  }
  SECTION("values that only look empty are not defaults") {
    // A tenant's default is "default": an empty tenant must be written.
    c.run.tenant = "";
    c.run.run = "";
    c.arguments = nullptr;  // the default is {}
    c.decision = nlohmann::json::array();
    c.evidence = nlohmann::json::object();  // the default is null
    c.lease_expires_ms = -1;
    CheckBothDecodeTo(c);
    const nlohmann::json compact = nlohmann::json::parse(Compact(c));
    CHECK(compact.at("tenant").get<std::string>().empty());
    CHECK(compact.at("evidence") == nlohmann::json::object());
  }
  SECTION("the default tenant and empty arguments are left out and read back") {
    c.run.tenant = "default";
    c.arguments = nlohmann::json::object();
    c.decision = nlohmann::json::object();
    const nlohmann::json compact = nlohmann::json::parse(Compact(c));
    CHECK_FALSE(compact.contains("tenant"));
    CHECK_FALSE(compact.contains("arguments"));
    CheckBothDecodeTo(c);
  }
  SECTION("a compensation is written whole, its empty members too") {
    c.compensation = CompensationSpec{};
    const nlohmann::json compact = nlohmann::json::parse(Compact(c));
    CHECK(compact.at("compensation") ==
          nlohmann::json{{"arguments", nlohmann::json::object()}, {"target", ""}, {"tool", ""}});
    CheckBothDecodeTo(c);
  }
}

TEST_CASE("command spec text: refused exactly where the tree's lossless text is", "[commands]") {
  std::string text;
  for (const std::string& bad :
       {std::string("\xff"), std::string("a\xc3"), std::string("\xc0\xaf"),
        std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82")}) {
    INFO("bytes " << nlohmann::json(bad).dump(-1, ' ', true,
                                              nlohmann::json::error_handler_t::replace));
    Command c = Sample();
    c.target = bad;
    CHECK_FALSE(internal::DumpLossless(EncodeCommand(c), text));
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
    c = Sample();
    c.arguments = {{"note", bad}};
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
    c = Sample();
    c.compensation = CompensationSpec{"undo", bad, {}};
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
  }
  Command c = Sample();
  c.arguments = {{"x", std::nan("")}};
  CHECK_FALSE(internal::DumpLossless(EncodeCommand(c), text));
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
  c = Sample();
  c.decision = {{"inf", std::numeric_limits<double>::infinity()}};
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
}

}  // namespace taskledger::testing
