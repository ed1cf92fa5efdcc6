// WriteCommandSpec (commands/src/internal/command_spec_text.h) writes the
// spec text a Redis command hash stores without building a JSON tree. Its
// full spelling must give exactly the bytes DumpLossless(EncodeCommand(c))
// gives (what earlier releases stored), for every member and every kind of
// string and number; its compact spelling (what the store writes now) must
// decode to the same Command with the members holding defaults left out.
// Both refuse exactly where DumpLossless refuses (invalid UTF-8, a
// non-finite number), so the caller falls back the same way. A typed
// decision record is kept apart from the spec (WriteDecisionApart) as the
// CBOR bytes its turn keeps, or stays in the spec where it cannot be.
// Single-threaded.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "command_test_support.h"
#include "internal/command_redis_decode.h"
#include "internal/command_spec_text.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/decision_bytes.h"

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
  // A command no tool call reserved has no call_id member: its text is what
  // every earlier release wrote for it.
  CHECK(Written(c).find("call_id") == std::string::npos);
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
    c.call.id = "call_7";
    CHECK(Written(c) == TreeText(c));
    CHECK(Compact(c).find("\"call_id\":\"call_7\"") != std::string::npos);
    CheckBothDecodeTo(c);
  }
  SECTION("strings with every escape, control bytes, DEL and multi-byte UTF-8") {
    std::string odd = "q\" b\\ \b\f\n\r\t";
    for (char ch = 1; ch < 0x20; ++ch) odd += ch;
    odd += std::string(1, '\0') + "\x7f" + "é € 𝄞 " + "\xef\xbf\xbf";
    c.step = odd;
    c.call.id = odd;
    c.target = odd;
    c.call.tool = "tool/" + odd;
    c.run.tenant = "t{:}" + odd;
    c.decision = {{"reason", odd}, {odd, {odd, 1}}};
    c.call.arguments = {{"s", odd},
                        {"max", std::numeric_limits<int64_t>::max()},
                        {"min", std::numeric_limits<int64_t>::min()},
                        {"f", 0.1},
                        {"e", 1e300}};
    CHECK(Written(c) == TreeText(c));
    CheckBothDecodeTo(c);
  }
  SECTION("an empty compensation and empty strings throughout") {
    c.compensation = CompensationSpec{};
    c.step = c.call.tool = c.target = c.idempotency_key = "";
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
    c.call.arguments = nullptr;  // the default is {}
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
    c.call.arguments = nlohmann::json::object();
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
    c.call.arguments = {{"note", bad}};
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
    c = Sample();
    c.compensation = CompensationSpec{"undo", bad, {}};
    CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
  }
  Command c = Sample();
  c.call.arguments = {{"x", std::nan("")}};
  CHECK_FALSE(internal::DumpLossless(EncodeCommand(c), text));
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
  c = Sample();
  c.decision = {{"inf", std::numeric_limits<double>::infinity()}};
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kFull, text));
  CHECK_FALSE(internal::WriteCommandSpec(c, internal::SpecSpelling::kCompact, text));
}

namespace {

// A decision record as a session stages it: rules with what they read, and
// a member a newer writer added (kept in `extra`).
std::shared_ptr<const DecisionRecord> TypedRecord() {
  auto d = std::make_shared<DecisionRecord>();
  d->conversation = "conv-1";
  d->turn = 4;
  d->version_seen = 3;
  d->tool = "refund_order";
  d->call_id = "c9";
  d->args_hash = "ab12";
  d->decision = "require_approval";
  d->rule = "retail.refund_cap";
  d->reason = "over the cap: \"120\" \xc3\xa9";
  d->pack_version = "p1";
  d->latency_us = 17;
  EntryRead seen{Category::kFact,
                 "order.#W1.total",
                 true,
                 "00ff00ff00ff00ff",
                 2,
                 SourceKind::kToolOutput,
                 "get_order_details#c3",
                 "order_total",
                 true};
  d->rules = {
      {"retail.auth", "allow", "", false, {}, {}},
      {"retail.refund_cap", "require_approval", "over the cap", false, {"total 120"}, {seen}}};
  EntryRead claimed{Category::kIdentifier,
                    "user\x01"
                    "id",
                    true,
                    "1234567890abcdef",
                    1,
                    SourceKind::kUserMessage,
                    "",
                    "",
                    false};
  EntryRead absent{
      Category::kCondition, "confirmation", false, "", 0, SourceKind::kAgent, "", "", false};
  d->rules.push_back({"retail.broken",
                      "deny",
                      "policy error\n\ttab \\ \x7f",
                      true,
                      {"line 1", "line \"2\""},
                      {claimed, absent}});
  return d;
}

// The same with members a newer writer added (kept in `extra`).
std::shared_ptr<const DecisionRecord> TypedRecordWithExtra() {
  auto d = std::make_shared<DecisionRecord>(*TypedRecord());
  d->extra = {{"zone", "eu"}, {"turn", "not the turn"}};
  return d;
}

}  // namespace

TEST_CASE("command decision: a typed record is kept and written as its JSON would be",
          "[commands]") {
  const bool with_extra = GENERATE(false, true);
  INFO("with members this version does not know: " << with_extra);
  const std::shared_ptr<const DecisionRecord> record =
      with_extra ? TypedRecordWithExtra() : TypedRecord();
  Command typed = Sample();
  Command as_json = typed;
  typed.decision = CommandDecision(record);
  as_json.decision = EncodeDecision(*record);
  REQUIRE(typed.decision.typed() == record.get());
  REQUIRE(as_json.decision.typed() == nullptr);

  // The same spec bytes in both spellings: what a store keeps does not
  // depend on the form, so earlier readers read it as before.
  CHECK(Written(typed) == Written(as_json));
  CHECK(Compact(typed) == Compact(as_json));
  CHECK(Written(typed) == TreeText(typed));
  CHECK(EncodeCommand(typed) == EncodeCommand(as_json));
  // Equal across forms, and read back (as JSON) equal to the typed one.
  CHECK(typed == as_json);
  CheckBothDecodeTo(typed);
  Command other = typed;
  auto changed = std::make_shared<DecisionRecord>(*record);
  changed->reason = "another reason";
  other.decision = CommandDecision(std::shared_ptr<const DecisionRecord>(changed));
  CHECK_FALSE(other == typed);
  CHECK_FALSE(other == as_json);

  // The verdict, rule and call id, read without the JSON tree, the same from both forms.
  CHECK(typed.decision.CallId() == as_json.decision.CallId());
  CHECK(typed.decision.Verdict() == as_json.decision.Verdict());
  CHECK(typed.decision.Rule() == as_json.decision.Rule());
  CHECK(typed.decision.CallId() == "c9");
  CHECK(typed.decision.Verdict() == "require_approval");
  CHECK(typed.decision.Rule() == record->rule);
  CHECK_FALSE(typed.decision.Rule().empty());
  // A record given as JSON that is not an object, or whose member is no
  // string, has none of them.
  CHECK(CommandDecision(nlohmann::json::array({"call_id"})).CallId().empty());
  CHECK(CommandDecision(nlohmann::json{{"decision", 3}, {"rule", nullptr}}).Verdict().empty());
  CHECK(CommandDecision(nlohmann::json{{"decision", 3}, {"rule", nullptr}}).Rule().empty());
  CHECK(CommandDecision().Json() == nlohmann::json::object());
}

TEST_CASE("command decision: a typed record that is not valid UTF-8 is refused as its tree is",
          "[commands]") {
  auto record = std::make_shared<DecisionRecord>(*TypedRecord());
  record->rules[1].reads[0].source_id = "bad \xff byte";
  Command c = Sample();
  c.decision = CommandDecision(std::shared_ptr<const DecisionRecord>(record));
  std::string text;
  CHECK_FALSE(internal::DumpLossless(EncodeCommand(c), text));
  for (auto spelling : {internal::SpecSpelling::kFull, internal::SpecSpelling::kCompact}) {
    std::string out;
    CHECK_FALSE(internal::WriteCommandSpec(c, spelling, out));
  }
}

TEST_CASE("command decision: a typed record is kept apart as the CBOR bytes its turn keeps",
          "[commands]") {
  const std::shared_ptr<const DecisionRecord> record = TypedRecord();
  Command c = Sample();
  c.decision = CommandDecision(record);

  std::string apart = "prefix";
  REQUIRE(internal::WriteDecisionApart(c.decision, apart));
  std::string turn_bytes;
  AppendDecisionBytes(*record, turn_bytes);
  CHECK(apart == "prefix" + turn_bytes);  // appended, and the very bytes the turn keeps
  auto back = DecodeDecisionBytes(std::string_view(apart).substr(6));
  REQUIRE(back.has_value());
  CHECK(*back == *record);

  // The spec written beside it has no decision member, in either spelling,
  // and reads back as the command with its decision left to the field.
  for (auto spelling : {internal::SpecSpelling::kFull, internal::SpecSpelling::kCompact}) {
    std::string spec;
    REQUIRE(internal::WriteCommandSpec(c, spelling, spec, /*decision_apart=*/true));
    const nlohmann::json parsed = nlohmann::json::parse(spec);
    CHECK_FALSE(parsed.contains("decision"));
    Command without = c;
    without.decision = CommandDecision();
    auto decoded = DecodeCommand(parsed);
    REQUIRE(decoded.has_value());
    CHECK(*decoded == without);
  }

  // What cannot be kept apart stays in the spec, and `out` is left as it was:
  // a decision given as JSON, a typed one with members this version does not
  // know, and one holding a string that is not valid UTF-8 (in a rule's log).
  auto bad_utf8 = std::make_shared<DecisionRecord>(*record);
  bad_utf8->rules[2].log[1] = "line \xc3";
  for (const CommandDecision& kept_in_spec :
       {CommandDecision(EncodeDecision(*record)), CommandDecision(TypedRecordWithExtra()),
        CommandDecision(std::shared_ptr<const DecisionRecord>(bad_utf8))}) {
    std::string out = "unchanged";
    CHECK_FALSE(internal::WriteDecisionApart(kept_in_spec, out));
    CHECK(out == "unchanged");
  }
}

}  // namespace taskledger::testing
