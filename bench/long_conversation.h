// The long conversation of issue #16, generated from the tau-bench retail
// gold trace: the events of its first conversation up to its first
// get_order_details call (identifying the user), then N get_order_details
// calls, each for a new order id with the recorded output re-labelled to that
// id, so every call adds its own entries (~16) to the ledger. bench_long
// replays it; bench_records stores its state and turns.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/session/trace.h"

namespace taskledger::bench {

// Replaces every string equal to `from` inside `j` by `to`.
inline void Relabel(nlohmann::json& j, const std::string& from, const std::string& to) {
  if (j.is_string()) {
    if (j.get_ref<const std::string&>() == from) j = to;
  } else if (j.is_structured()) {
    for (auto& x : j) Relabel(x, from, to);
  }
}

inline Result<TraceConversation> GenerateLongConversation(const std::string& trace_path,
                                                          int calls) {
  std::ifstream in(trace_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto parsed = ParseTraceLine(line);
    if (!parsed.has_value()) return parsed.error();
    const TraceConversation& c = parsed.value();
    size_t call = 0;
    while (call < c.events.size() && !(c.events[call].type == TraceEventType::kCall &&
                                       c.events[call].tool == "get_order_details")) {
      ++call;
    }
    if (call + 1 >= c.events.size() || c.events[call + 1].type != TraceEventType::kResult) continue;
    TraceConversation out;
    out.conversation = "long-" + std::to_string(calls);
    out.domain = c.domain;
    out.events.assign(c.events.begin(), c.events.begin() + static_cast<ptrdiff_t>(call));
    const TraceEvent& get = c.events[call];
    const TraceEvent& result = c.events[call + 1];
    const std::string order = get.arguments.value("order_id", "");
    for (int i = 0; i < calls; ++i) {
      std::string id = "#W" + std::to_string(9'000'000 + i);
      TraceEvent g = get;
      g.id = "long" + std::to_string(i);
      Relabel(g.arguments, order, id);
      TraceEvent r = result;
      r.id = g.id;
      Relabel(r.output, order, id);
      out.events.push_back(std::move(g));
      out.events.push_back(std::move(r));
    }
    return out;
  }
  return Status::NotFound("no get_order_details call with a result in " + trace_path);
}

}  // namespace taskledger::bench
