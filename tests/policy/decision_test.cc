// Decision procedure: each outcome, priority order, first deny, strength
// order, tool classification and the decision-log record.
#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/base/digest.h"
#include "taskledger/policy/decision.h"

using namespace taskledger;
using namespace taskledger::testing;

namespace {

const char* kOutcomes = R"lua(
rule { id = "a.allow", tools = {"write_allow", "write_mixed"}, priority = 10,
       check = function(call, ledger) return allow() end }
rule { id = "b.deny", tools = {"write_deny"},
       check = function(call, ledger) return deny("order is delivered; cancel is impossible") end }
rule { id = "c.approve", tools = {"write_approve", "write_mixed"}, priority = 5,
       check = function(call, ledger) return require_approval("refunds over $500 need a manager") end }
rule { id = "d.confirm", tools = {"write_confirm", "write_mixed"}, priority = 7,
       check = function(call, ledger) return confirm("Cancel order #W1?") end }
rule { id = "e.confirm_low", tools = {"write_mixed"}, priority = 1,
       check = function(call, ledger) return confirm("second question") end }
)lua";

}  // namespace

TEST_CASE("each rule outcome becomes the decision", "[policy]") {
  auto checker = MakeChecker(MakePack(kOutcomes));
  LedgerState s;
  PolicyDecision d = checker->Check(CallOf("write_allow"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kAllow);
  CHECK(d.rule_id == "a.allow");
  d = checker->Check(CallOf("write_deny"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.reason == "order is delivered; cancel is impossible");
  d = checker->Check(CallOf("write_approve"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kRequireApproval);
  CHECK(d.reason == "refunds over $500 need a manager");
  d = checker->Check(CallOf("write_confirm"), s, {}, kNow);
  CHECK(d.outcome == Outcome::kConfirm);
  CHECK(d.reason == "Cancel order #W1?");
}

TEST_CASE("approval beats confirmation beats allow; the highest-priority rule of that kind decides",
          "[policy]") {
  auto checker = MakeChecker(MakePack(kOutcomes));
  PolicyDecision d = checker->Check(CallOf("write_mixed"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kRequireApproval);
  CHECK(d.rule_id == "c.approve");
  REQUIRE(d.rules.size() == 4);
  // Evaluation order: priority descending.
  CHECK(d.rules[0].rule_id == "a.allow");
  CHECK(d.rules[1].rule_id == "d.confirm");
  CHECK(d.rules[2].rule_id == "c.approve");
  CHECK(d.rules[3].rule_id == "e.confirm_low");
}

TEST_CASE("the first deny in priority order decides and stops evaluation", "[policy]") {
  auto checker = MakeChecker(MakePack(R"lua(
    rule { id = "z.low_deny", tools = {"write_x"}, priority = 1,
           check = function() return deny("low") end }
    rule { id = "b.high_deny", tools = {"write_x"}, priority = 9,
           check = function() return deny("high b") end }
    rule { id = "a.high_deny", tools = {"write_x"}, priority = 9,
           check = function() return deny("high a") end }
    rule { id = "top.allow", tools = {"write_*"}, priority = 20,
           check = function() return allow() end }
  )lua"));
  PolicyDecision d = checker->Check(CallOf("write_x"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rule_id == "a.high_deny");  // ties broken by id
  CHECK(d.reason == "high a");
  REQUIRE(d.rules.size() == 2);
  CHECK(d.rules[0].rule_id == "top.allow");
}

TEST_CASE("read-only tools run no rule; unknown tools follow the pack default", "[policy]") {
  const char* lua = R"lua(
    rule { id = "all", tools = {"*"}, check = function() return deny("everything is denied") end }
  )lua";
  auto deny_unknown = MakeChecker(MakePack(lua));
  PolicyDecision d = deny_unknown->Check(CallOf("get_order"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kAllow);
  CHECK(d.read_only());
  CHECK(d.rules.empty());
  d = deny_unknown->Check(CallOf("launch_rocket"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rule_id == std::string(kUnknownToolRule));
  CHECK(d.reason.find("launch_rocket") != std::string::npos);

  auto allow_unknown = MakeChecker(MakePack(lua, "allow"));
  d = allow_unknown->Check(CallOf("launch_rocket"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kDeny);
  CHECK(d.rule_id == "all");  // checked by the rules, as a write

  auto no_rules = MakeChecker(MakePack("", "allow"));
  d = no_rules->Check(CallOf("launch_rocket"), LedgerState{}, {}, kNow);
  CHECK(d.outcome == Outcome::kAllow);
  CHECK(d.tool_class == ToolClass::kUnknown);
}

TEST_CASE("the decision-log record names what was decided and on what", "[policy]") {
  auto checker = MakeChecker(MakePack(kOutcomes));
  ProposedCall call = CallOf("write_deny", {{"order_id", "#W1"}, {"n", 2.0}});
  PolicyDecision d = checker->Check(call, LedgerState{}, {}, kNow);
  nlohmann::json rec = DecisionLogRecord(d, call, {"conv-1", 4, 3, 2});
  CHECK(rec["conversation"] == "conv-1");
  CHECK(rec["turn"] == 4);
  CHECK(rec["version_seen"] == 3);
  CHECK(rec["staged_seen"] == 2);
  CHECK(rec["tool"] == "write_deny");
  CHECK(rec["call_id"] == "c1");
  CHECK(rec["decision"] == "deny");
  CHECK(rec["rule"] == "b.deny");
  CHECK(rec["pack_version"] == checker->pack()->version());
  CHECK(rec["rules"].size() == 1);
  CHECK(rec["rules"][0]["outcome"] == "deny");
  // 2.0 and 2 are the same argument.
  CHECK(rec["args_hash"] == ArgsHash({{"order_id", "#W1"}, {"n", 2}}));
  CHECK(rec["args_hash"] != ArgsHash({{"order_id", "#W2"}, {"n", 2}}));
}

TEST_CASE("the decision says whether the tool is egress, worked out with its class", "[policy]") {
  auto pack = RulePack::FromFiles({{"pack.json", R"({"name": "t",
      "tools": {"read_only": ["get_*"], "writes": ["send_*", "post_*"],
                "egress": ["get_webpage", "post_*"]}})"}});
  REQUIRE(pack.has_value());
  auto checker = MakeChecker(pack.value());
  // Asked before any check of the tool, ClassOf works the plan out itself.
  CHECK(checker->ClassOf("post_form") == CallClass{ToolClass::kWrites, true});
  CHECK_FALSE(checker->ClassOf("post_form").command());
  CHECK(checker->ClassOf("launch_rocket") == CallClass{ToolClass::kUnknown, false});
  CHECK(checker->ClassOf("launch_rocket").writes());
  struct Expect {
    const char* tool;
    ToolClass cls;
    bool egress;
  };
  // An egress tool is gated as a write, even one a read_only glob matches;
  // a tool both writes and egress lists name stays egress.
  for (const Expect& e : {Expect{"get_order", ToolClass::kReadOnly, false},
                          Expect{"get_webpage", ToolClass::kWrites, true},
                          Expect{"send_email", ToolClass::kWrites, false},
                          Expect{"post_webhook", ToolClass::kWrites, true}}) {
    for (int again = 0; again < 2; ++again) {  // the second answer comes from the tool's plan
      PolicyDecision d = checker->Check(CallOf(e.tool), LedgerState{}, {}, kNow);
      INFO(e.tool << " check " << again);
      CHECK(d.tool_class == e.cls);
      CHECK(d.egress == e.egress);
      CHECK(d.read_only() == (e.cls == ToolClass::kReadOnly));
      CHECK(d.outcome == Outcome::kAllow);
      // ClassOf answers what the decision carries.
      CHECK(checker->ClassOf(e.tool) == CallClass{d.tool_class, d.egress});
      CHECK(checker->ClassOf(e.tool).writes() == !d.read_only());
      // So does the pack's own answer, for callers without a checker.
      CHECK(PackClassOf(**pack, e.tool) == CallClass{d.tool_class, d.egress});
    }
  }
}
