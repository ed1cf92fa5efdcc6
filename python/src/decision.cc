// Bindings of calls and policy decisions: taskledger.Call, RuleEvaluation
// and Decision (with the denial message a model reads for a blocked call).
// Plain immutable values; any thread.
#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/session/session.h"

namespace taskledger::py {

namespace py = pybind11;
using namespace py::literals;

void RegisterDecisions(py::module_& m) {
  // One class for a tool call wherever it appears (base/tool_call.h): what an
  // adapter parses out of a vendor message and what the gate checks. `Call`
  // is the same class under the gate's name; `name` reads the tool as the
  // vendors call it.
  auto tool_call =
      py::class_<ToolCall>(m, "ToolCall", "A tool call: id, tool, arguments (a dict).")
          .def(py::init([](py::handle id, py::handle tool, py::handle arguments) {
                 return MakeCall(id, tool, arguments);
               }),
               "id"_a, "tool"_a, "arguments"_a = py::none())
          .def_readonly("id", &ToolCall::id)
          .def_readonly("tool", &ToolCall::tool)
          .def_readonly("name", &ToolCall::tool, "The tool, as vendors name it (same as tool).")
          .def_property_readonly("arguments",
                                 [](const ToolCall& c) { return FromJson(c.arguments); })
          .def("__repr__", [](const ToolCall& c) {
            return "<taskledger.ToolCall " + c.id + " " + c.tool + ">";
          });
  m.attr("Call") = tool_call;

  py::class_<RuleEvaluation>(m, "RuleEvaluation", "What one rule said about a call.")
      .def_property_readonly("rule", [](const RuleEvaluation& r) { return r.rule_id.str(); })
      .def_property_readonly(
          "outcome", [](const RuleEvaluation& r) { return std::string(OutcomeName(r.outcome)); })
      .def_readonly("reason", &RuleEvaluation::reason)
      .def_readonly("error", &RuleEvaluation::error, "True when the rule itself failed (denied).")
      .def_readonly("log", &RuleEvaluation::log,
                    "The lines the rule wrote with log() during this check (never in the prompt).")
      .def_property_readonly(
          "reads",
          [](const RuleEvaluation& r) {
            // Encoded by the ledger's codec: the same dicts a decision record holds.
            DecisionRecord record;
            record.rules.emplace_back().reads = r.reads;
            nlohmann::json rule = EncodeDecision(record)["rules"][0];
            return FromJson(rule.value("reads", nlohmann::json::array()));
          },
          "The ledger entries the rule read: dicts of category, key, present and, for a present "
          "entry, digest, turn, source, source_id, rule, verified (empty when not resolved).");

  py::class_<PolicyDecision>(m, "Decision", "The policy gate's answer for one call.")
      .def_property_readonly("allowed", &PolicyDecision::allowed)
      .def_property_readonly(
          "outcome", [](const PolicyDecision& d) { return std::string(OutcomeName(d.outcome)); },
          "\"allow\", \"confirm\", \"require_approval\" or \"deny\".")
      .def_readonly("rule", &PolicyDecision::rule_id, "The deciding rule's id ('' if none ran).")
      .def_readonly("reason", &PolicyDecision::reason, "Why, written for the model to act on.")
      .def_readonly("rules", &PolicyDecision::rules, "Every rule evaluated, in order.")
      .def_property_readonly("read_only", &PolicyDecision::read_only,
                             "True for a read-only tool: allowed, no rule ran.")
      .def_property_readonly(
          "tool_class",
          [](const PolicyDecision& d) { return std::string(ToolClassName(d.tool_class)); })
      .def_property_readonly("pack_version",
                             [](const PolicyDecision& d) { return d.pack_version.str(); })
      .def_readonly("latency_us", &PolicyDecision::latency_us)
      .def(
          "denial_message",
          [](const PolicyDecision& d, const ProposedCall& call,
             const std::optional<std::string>& hint) {
            return hint ? DenialMessage(call, d, *hint) : DenialMessage(call, d);
          },
          "call"_a, "hint"_a = py::none(),
          "The tool-result text telling the model why `call` did not run, ending with `hint` "
          "(what to do next: pass pack.denial_hint for the session's text; default: the "
          "domain-neutral one).")
      .def("__bool__", &PolicyDecision::allowed)
      .def("__repr__", [](const PolicyDecision& d) {
        return "<taskledger.Decision " + std::string(OutcomeName(d.outcome)) +
               (d.rule_id.empty() ? "" : " " + d.rule_id) + ">";
      });
}

}  // namespace taskledger::py
