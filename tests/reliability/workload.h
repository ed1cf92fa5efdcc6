// Shared pieces of the reliability tests: the retail pack, stores opened on a
// URL, a deterministic stand-in for the retail tools, and one agent turn whose
// every effect is recognisable afterwards, so a test can read a conversation
// back and prove that each acknowledged turn is there exactly once.
//
// A workload turn k of a conversation: the user says something, the agent
// calls get_order_details for order "#W<k>" (call id "c<k>"), and the turn is
// committed; it leaves the fact order.#W<k>.status and the call c<k> in turn
// record k. Not thread-safe per object; each worker thread builds its own.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "taskledger/ledger/redis_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/session/session.h"

namespace taskledger::testing {

inline std::shared_ptr<const RulePack> RetailPack() {
  static const std::shared_ptr<const RulePack> pack = [] {
    auto p = RulePack::Load(std::string(TASKLEDGER_SOURCE_DIR) + "/rules/retail");
    if (!p.has_value()) throw std::runtime_error("rules/retail: " + p.error().ToString());
    return p.value();
  }();
  return pack;
}

inline RedisOptions RedisOpts(const std::string& url, std::chrono::milliseconds timeout) {
  RedisOptions r;
  r.url = url;
  r.connect_timeout = timeout;
  r.command_timeout = timeout;
  r.store.snapshot_every = 4;
  return r;
}

inline std::unique_ptr<Store> MustOpenStore(
    const std::string& url, std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) {
  auto store = OpenRedisStore(RedisOpts(url, timeout));
  if (!store.has_value()) FAIL("OpenRedisStore(" << url << "): " << store.error().ToString());
  return std::move(store.value());
}

// The retail read tools, answering from the call's own arguments.
inline Result<ToolOutput> RetailTools(const ProposedCall& call) {
  if (call.tool == "get_order_details") {
    const std::string order = call.arguments.value("order_id", "");
    return ToolOutput{{{"order_id", order},
                       {"user_id", "u_1"},
                       {"status", "pending"},
                       {"items", nlohmann::json::array()},
                       {"payment_history", nlohmann::json::array()}},
                      false};
  }
  if (call.tool == "cancel_pending_order") {
    return ToolOutput{{{"order_id", call.arguments.value("order_id", "")}, {"status", "cancelled"}},
                      false};
  }
  return Status::NotFound("no such tool: " + call.tool);
}

inline std::string OrderOf(uint64_t k) { return "#W" + std::to_string(k); }
inline std::string StatusKeyOf(uint64_t k) { return "order." + OrderOf(k) + ".status"; }

// Stages workload turn `k` (see the file comment) in `session`. Returns the
// first thing that went wrong; no Catch assertions, so worker threads may
// call it.
inline Status StageWorkloadTurn(Session& session, uint64_t k) {
  if (Status s = session.RecordUserMessage("please look at order " + OrderOf(k)); !s.ok()) return s;
  ProposedCall call{"c" + std::to_string(k), "get_order_details", {{"order_id", OrderOf(k)}}};
  CallResult r = session.HandleToolCall(call, RetailTools);
  if (!r.executed) return Status::Internal("call " + call.id + " was not executed: " + r.message);
  return Status::Ok();
}

// Checks that conversation `id` holds exactly workload turns 1..turns, each
// once, in order: the head is `turns`, turn record k carries call c<k> and
// nothing else does, and the head state has every order's status. Returns a
// description of the first difference, or "" when it matches.
inline std::string VerifyWorkload(Store& store, const ConversationId& id, uint64_t turns) {
  auto head = store.Head(id);
  if (!head.has_value()) return "Head: " + head.error().ToString();
  if (head.value() != turns) {
    return "head is " + std::to_string(head.value()) + ", expected " + std::to_string(turns);
  }
  if (turns == 0) return "";
  auto records = store.ReadTurns(id, 1, turns);
  if (!records.has_value()) return "ReadTurns: " + records.error().ToString();
  for (uint64_t k = 1; k <= turns; ++k) {
    const TurnRecord& t = records.value()[k - 1];
    if (t.calls.size() != 1 || t.calls[0].call.id != "c" + std::to_string(k)) {
      std::string ids;
      for (const CallRecord& c : t.calls) ids += c.call.id + " ";
      return "turn " + std::to_string(k) + " holds calls [" + ids + "], expected [c" +
             std::to_string(k) + "]";
    }
  }
  auto state = store.ReadHead(id);
  if (!state.has_value()) return "ReadHead: " + state.error().ToString();
  for (uint64_t k = 1; k <= turns; ++k) {
    if (state.value().FindLive(Category::kFact, StatusKeyOf(k), 0) == nullptr) {
      return "fact " + StatusKeyOf(k) + " is missing";
    }
  }
  return "";
}

// A failure the store reports while it is down or stalled: worth retrying.
inline bool StoreDown(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kTimeout;
}

}  // namespace taskledger::testing
