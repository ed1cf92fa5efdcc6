// PolicyChecker: the decision procedure over a CompiledPack (see checker.h).
// Rule order, the first-deny rule, outcome strength and fail-closed handling
// live here; running extractors is in checker_extract.cc, and everything
// touching Lua internals is in sandbox.cc, lua_json.cc and compiled_pack.cc
// (pack/) and ledger_view.cc. Not thread-safe.
#include "taskledger/policy/checker.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal/checker_impl.h"
#include "taskledger/pack/lua/lua_json.h"

namespace taskledger {

using lua::Sandbox;

namespace {

constexpr size_t kMaxReasonBytes = 2000;
constexpr size_t kRuleCacheEntries = 4096;

std::string Truncate(std::string s) {
  if (s.size() > kMaxReasonBytes) {
    s.resize(kMaxReasonBytes);
    s += "...";
  }
  return s;
}

std::optional<Outcome> TokenOutcome(const void* token) {
  if (token == &lua::kAllowToken) return Outcome::kAllow;
  if (token == &lua::kDenyToken) return Outcome::kDeny;
  if (token == &lua::kApprovalToken) return Outcome::kRequireApproval;
  if (token == &lua::kConfirmToken) return Outcome::kConfirm;
  return std::nullopt;
}

// The outcome of a rule{ why = fn } that returned `returned` values above
// `top`: nothing, nil or false allows, a non-empty string denies with it as the
// reason (set in `text`, kept alive by the stack). Anything else is an error
// in the rule, raised here (so the check fails closed with the rule's name).
Outcome WhyOutcome(lua_State* L, int top, int returned, std::string_view& text) {
  if (returned > 1) {
    luaL_error(L, "why returned %d values; it must return one deny reason (a string) or nil",
               returned);
  }
  if (returned == 0 || !lua_toboolean(L, top + 1)) return Outcome::kAllow;
  if (lua_type(L, top + 1) != LUA_TSTRING) {
    luaL_error(L,
               "why returned %s; it must return the deny reason (a non-empty string), or nil "
               "or false to allow (a verdict such as deny(...) belongs in check)",
               luaL_typename(L, top + 1));
  }
  size_t n = 0;
  const char* s = lua_tolstring(L, top + 1, &n);
  if (n == 0) luaL_error(L, "why returned an empty reason; a deny reason must say what is wrong");
  text = std::string_view(s, n);
  return Outcome::kDeny;
}

using FactsSlots = std::array<std::pair<int, int>, 8>;  // (registry ref, stack index)

// The stack index of the value facts() `ref` returned earlier in this check, or 0.
int FactsFor(const FactsSlots& slots, size_t count, int ref) {
  for (size_t i = 0; i < count; ++i) {
    if (slots[i].first == ref) return slots[i].second;
  }
  return 0;
}

// The registry key of the table of facts proxies: facts() ref -> the
// read-only proxy its table values are handed out through.
const char kFactsProxiesKey = 0;

// Replaces the table at the top, a facts value rules could change, with a
// read-only proxy (every level, lazily: lua::WrapReadOnly). Each facts
// function has one proxy, re-pointed at its value in every check, so a check
// allocates no proxy for a value whose tables are read through it.
void GuardFacts(lua_State* L, int ref) {
  const int value = lua_gettop(L);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kFactsProxiesKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 4, 0);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kFactsProxiesKey);
  }
  if (lua_rawgeti(L, -1, ref) == LUA_TTABLE) {
    lua::RepointReadOnly(L, -1, value);
  } else {
    lua_pop(L, 1);
    lua_pushvalue(L, value);
    lua::WrapReadOnly(L, -1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, ref);
  }
  lua_replace(L, value);
  lua_pop(L, 1);
}

// Calls facts() `ref` with the call and the ledger and leaves its one value on
// the stack; returns the value's index. Rules share the value, so a table is
// handed out read-only: one rule cannot change what a later rule sees.
int ComputeFacts(lua_State* L, int ref, int call_idx, int ledger_idx) {
  luaL_checkstack(L, 4, "too many facts values");
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_pushvalue(L, call_idx);
  lua_pushvalue(L, ledger_idx);
  lua_call(L, 2, 1);
  if (lua::IsWritableTable(L, -1)) GuardFacts(L, ref);
  return lua_gettop(L);
}

}  // namespace

const PolicyChecker::Impl::ToolPlan& PolicyChecker::Impl::PlanFor(const std::string& tool) {
  auto it = plans.find(tool);
  if (it != plans.end()) return it->second;
  if (plans.size() >= kRuleCacheEntries) plans.clear();
  ToolPlan plan;
  const CallClass cls = PackClassOf(*pack, tool);
  plan.tool_class = cls.tool_class;
  plan.egress = cls.egress;
  for (size_t i = 0; i < runtime->compiled->rules.size(); ++i) {
    for (const std::string& glob : runtime->compiled->rules[i].info.tools) {
      if (GlobMatch(glob, tool)) {
        plan.rules.push_back(i);
        break;
      }
    }
  }
  return plans.emplace(tool, std::move(plan)).first->second;
}

void PolicyChecker::Impl::Decide(PolicyDecision& d, const ProposedCall& call,
                                 const LedgerState& state, const ViewKey& key, int64_t now_ms,
                                 std::chrono::steady_clock::time_point start) {
  d.pack_version = pack_version;
  const ToolPlan& plan = PlanFor(call.tool);
  d.tool_class = plan.tool_class;
  d.egress = plan.egress;
  if (d.tool_class == ToolClass::kReadOnly) {
    d.outcome = Outcome::kAllow;  // read_only(): no rule runs
    return;
  }
  if (d.tool_class == ToolClass::kUnknown && !pack->allow_unknown_tools()) {
    d.outcome = Outcome::kDeny;
    d.rule_id = kUnknownToolRule;
    d.reason = "tool '" + call.tool + "' is not declared by rule pack '" + pack->name() +
               "' and undeclared tools are denied; use one of the declared tools";
    return;
  }
  const std::vector<size_t>& applicable = plan.rules;
  d.outcome = Outcome::kAllow;
  if (applicable.empty()) return;

  Sandbox& sb = *runtime->compiled->sandbox;
  runtime->view.Bind(state, call, key, now_ms);
  d.check_seq = ++check_seq;
  checked_state = &state;
  checked_version = state.version;
  checked_now_ms = now_ms;
  runtime->provenance.Bind(provenance, &call);
  d.rules.reserve(applicable.size());
  // One protected call runs every rule: the first error ends the check anyway,
  // and `current` says whose it was.
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t current = kNone;
  runtime->log.Reset();
  sb.ArmBudget(limits.instruction_budget, start);
  Status st = sb.Protected([&](lua_State* L) {
    runtime->call_view.Push(L, call);
    int call_idx = lua_gettop(L);
    runtime->view.Push(L);
    int ledger_idx = lua_gettop(L);
    // Each facts() function the rules declare runs once per check, on first
    // use; its value stays on the stack below the rules' frames.
    FactsSlots facts{};
    size_t facts_count = 0;
    for (size_t k = 0; k < applicable.size(); ++k) {
      const lua::CompiledRule& rule = runtime->compiled->rules[applicable[k]];
      current = k;
      int facts_idx = 0;
      if (rule.facts_ref != LUA_NOREF) facts_idx = FactsFor(facts, facts_count, rule.facts_ref);
      if (facts_idx == 0 && rule.facts_ref != LUA_NOREF) {
        facts_idx = ComputeFacts(L, rule.facts_ref, call_idx, ledger_idx);
        if (sb.budget_tripped()) luaL_error(L, "budget exceeded");
        if (facts_count < facts.size()) facts[facts_count++] = {rule.facts_ref, facts_idx};
      }
      const int top = lua_gettop(L);
      lua_rawgeti(L, LUA_REGISTRYINDEX, rule.ref);
      lua_pushvalue(L, call_idx);
      lua_pushvalue(L, ledger_idx);
      if (facts_idx != 0) lua_pushvalue(L, facts_idx);
      lua_call(L, facts_idx != 0 ? 3 : 2, LUA_MULTRET);
      // The rule caught the budget kill with pcall and still returned.
      if (sb.budget_tripped()) luaL_error(L, "budget exceeded");
      const int returned = lua_gettop(L) - top;
      Outcome out = Outcome::kAllow;
      std::string_view text;
      if (rule.why) {
        out = WhyOutcome(L, top, returned, text);
      } else {
        std::optional<lua::Verdict> verdict;
        if (returned >= 1) verdict = lua::ReadVerdict(L, top + 1);
        std::optional<Outcome> o = verdict ? TokenOutcome(verdict->token) : std::nullopt;
        out = o.value_or(Outcome::kDeny);  // luaL_error below does not return
        if (!o) {
          luaL_error(L,
                     "check returned %s; it must return allow(), deny(reason), "
                     "require_approval(reason) or confirm(question)",
                     returned >= 1 ? luaL_typename(L, top + 1) : "nothing");
        }
        if (returned != 1) {
          luaL_error(L,
                     "check returned %d values; it must return exactly one verdict (a second "
                     "value after allow()/deny(...) is a mistake in the rule)",
                     returned);
        }
        text = verdict->text;
      }
      RuleEvaluation& ev = d.rules.emplace_back();
      ev.rule_id = rule.id;
      ev.outcome = out;
      if (out != Outcome::kAllow) ev.reason = Truncate(std::string(text));
      if (runtime->log.has_lines()) ev.log = runtime->log.Take(false);
      runtime->view.EndRule();
      lua_settop(L, top);
      if (out == Outcome::kDeny) break;
    }
    current = kNone;
  });
  runtime->view.Unbind();
  sb.DisarmBudget();
  // Evidence is resolved only for a decision that keeps it (not an allow).
  const bool keeps = !st.ok() || std::any_of(d.rules.begin(), d.rules.end(), [](const auto& ev) {
    return ev.outcome != Outcome::kAllow;
  });
  if (keeps) {
    nlohmann::json evidence = runtime->provenance.TakeEvidence();
    if (!evidence.empty()) d.provenance = std::move(evidence);
  }
  runtime->provenance.Unbind();
  if (!st.ok()) {
    sb.Recover();
    d.outcome = Outcome::kDeny;
    if (current == kNone) {
      d.rule_id = kCheckerErrorRule;
      d.reason = Truncate("policy error: the rules could not be evaluated: " + st.message());
      return;
    }
    const SharedString& id = runtime->compiled->rules[applicable[current]].id;
    if (d.rules.size() > current) d.rules.resize(current);
    RuleEvaluation& ev = d.rules.emplace_back();
    ev.rule_id = id;
    ev.outcome = Outcome::kDeny;
    ev.error = true;
    ev.reason = Truncate("policy error in rule " + id.str() + ": " + st.message());
    ev.log = runtime->log.Take(true);
    runtime->view.EndRule();
    d.rule_id = id;
    d.reason = ev.reason;
    return;
  }
  if (!d.rules.empty()) {
    std::vector<std::string> rest = runtime->log.Take(true);  // the "dropped" note, if any
    d.rules.back().log.insert(d.rules.back().log.end(), rest.begin(), rest.end());
  }
  const RuleEvaluation* decider = nullptr;
  for (const RuleEvaluation& ev : d.rules) {
    if (decider == nullptr || ev.outcome > decider->outcome) decider = &ev;
    if (ev.outcome == Outcome::kDeny) break;
  }
  if (decider == nullptr) {
    d.provenance = nullptr;
    return;
  }
  d.outcome = decider->outcome;
  d.rule_id = decider->rule_id;
  d.reason = decider->reason;
  if (d.outcome == Outcome::kAllow) d.provenance = nullptr;
}

PolicyChecker::PolicyChecker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PolicyChecker::~PolicyChecker() = default;

Result<std::unique_ptr<PolicyChecker>> PolicyChecker::Create(std::shared_ptr<const RulePack> pack,
                                                             CheckerLimits limits) {
  if (!pack) return Status::InvalidArgument("PolicyChecker needs a rule pack");
  try {
    CheckerLimits effective = limits;
    effective.max_json_depth = std::max(limits.max_json_depth, pack->max_json_depth());
    auto runtime = policy_internal::LoadRuleRuntime(*pack, effective);
    if (!runtime) return runtime.error();
    auto impl = std::make_unique<Impl>();
    impl->pack_version = pack->version();
    impl->pack = std::move(pack);
    impl->limits = limits;
    impl->runtime = std::move(runtime.value());
    return std::unique_ptr<PolicyChecker>(new PolicyChecker(std::move(impl)));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("creating a policy checker: ") + e.what());
  }
}

Status PolicyChecker::SetPack(std::shared_ptr<const RulePack> pack) {
  if (!pack) return Status::InvalidArgument("SetPack needs a rule pack");
  if (pack == impl_->pack || pack->version() == impl_->pack->version()) {
    impl_->pack = std::move(pack);
    impl_->pack_version = impl_->pack->version();
    return Status::Ok();
  }
  try {
    CheckerLimits limits = impl_->limits;
    limits.max_json_depth = std::max(limits.max_json_depth, pack->max_json_depth());
    auto runtime = policy_internal::LoadRuleRuntime(*pack, limits);
    if (!runtime) return runtime.error();
    impl_->runtime = std::move(runtime.value());
    impl_->pack_version = pack->version();
    impl_->pack = std::move(pack);
    impl_->plans.clear();
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("reloading the rule pack: ") + e.what());
  }
}

const std::shared_ptr<const RulePack>& PolicyChecker::pack() const { return impl_->pack; }

CallClass PolicyChecker::ClassOf(const std::string& tool) {
  const Impl::ToolPlan& plan = impl_->PlanFor(tool);
  return CallClass{plan.tool_class, plan.egress};
}

Status PolicyChecker::ResolveReads(PolicyDecision& d, const LedgerState& state) {
  if (d.check_seq == 0) return Status::Ok();
  const Impl& impl = *impl_;
  if (d.check_seq != impl.check_seq || &state != impl.checked_state ||
      state.version != impl.checked_version) {
    return Status::FailedPrecondition(
        "the reads of a decision can only be resolved right after its check, on its state");
  }
  const policy_internal::LedgerView& view = impl.runtime->view;
  const size_t n = std::min(d.rules.size(), view.rules_logged());
  for (size_t k = 0; k < n; ++k) {
    RuleEvaluation& ev = d.rules[k];
    ev.reads = view.ResolveReads(k, state, impl.checked_now_ms);
    if (size_t dropped = view.dropped(k); dropped > 0) {
      ev.log.push_back("(" + std::to_string(dropped) + " more entry reads not recorded: " +
                       std::to_string(policy_internal::LedgerView::kMaxReads) + " per rule)");
    }
  }
  return Status::Ok();
}

PolicyDecision PolicyChecker::Check(const ProposedCall& call, const LedgerState& state,
                                    const ViewKey& key, int64_t now_ms) {
  auto start = std::chrono::steady_clock::now();
  PolicyDecision d;
  try {
    impl_->Decide(d, call, state, key, now_ms, start);
  } catch (const std::exception& e) {
    impl_->runtime->view.Unbind();
    impl_->runtime->compiled->sandbox->DisarmBudget();
    d.outcome = Outcome::kDeny;
    d.rule_id = kCheckerErrorRule;
    d.reason = std::string("policy error: ") + e.what();
  }
  d.latency_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  return d;
}

void PolicyChecker::SetProvenance(const provenance::ProvenanceIndex* index) {
  impl_->provenance = index;
}

size_t PolicyChecker::memory_in_use() const {
  return impl_->runtime->compiled->sandbox->memory_in_use();
}

}  // namespace taskledger
