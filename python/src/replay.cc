// taskledger.replay: a trace file (docs/trace-format.md) driven through
// sessions exactly as `taskledger replay` drives it (one checker and one
// compiled extract.json for the whole run). The GIL is released for the whole
// replay; the results are converted afterwards. Any thread.
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/session/replay.h"
#include "taskledger/session/session.h"
#include "taskledger/session/trace_reader.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;

py::dict ReplayedToDict(const ConversationReplay& r) {
  py::dict d;
  d["conversation"] = r.conversation;
  d["version"] = r.version;
  d["events"] = r.events;
  d["extraction_errors"] = r.extraction_errors;
  py::list calls;
  for (const ReplayedCall& c : r.calls) {
    py::dict cd;
    cd["call_id"] = c.call_id;
    cd["tool"] = c.tool;
    cd["arguments"] = FromJson(c.arguments);
    cd["decision"] = std::string(OutcomeName(c.outcome));
    cd["rule"] = c.rule_id;
    cd["reason"] = c.reason;
    cd["read_only"] = c.read_only;
    cd["executed"] = c.executed;
    cd["version_seen"] = c.version_seen;
    cd["recorded_despite_denial"] = c.recorded_despite_denial;
    calls.append(cd);
  }
  d["calls"] = calls;
  return d;
}

}  // namespace

void RegisterReplay(py::module_& m) {
  m.def(
      "replay",
      [](const std::string& path, const PyPack& pack, std::optional<PyStore> store,
         const std::string& tenant, const std::string& prefix) {
        std::shared_ptr<Store> st = store ? store->store : nullptr;
        std::vector<std::variant<ConversationReplay, std::pair<uint64_t, Status>>> out;
        Status failed = [&]() -> Status {
          py::gil_scoped_release release;
          std::unique_ptr<Store> own;
          if (!st) own = NewMemoryStore();
          Store& target = st ? *st : *own;
          auto checker = PolicyChecker::Create(pack.pack);
          if (!checker) return checker.error();
          auto rules = CompileExtractionRules(*pack.pack);
          if (!rules) return rules.error();
          SessionOptions options;
          options.checker = checker->get();
          options.extraction_rules = *rules;
          auto reader = TraceReader::Open(path);
          if (!reader) return reader.error();
          while (auto line = (*reader)->Next()) {
            if (!line->conversation) {
              out.emplace_back(std::pair{line->line, line->conversation.error()});
              continue;
            }
            ConversationId id{tenant, prefix + line->conversation->conversation};
            auto session = Session::Open(target, id, pack.pack, options);
            if (!session) return session.error();
            auto r = ReplayConversation(**session, *line->conversation);
            if (!r) {
              out.emplace_back(std::pair{line->line, r.error()});
              continue;
            }
            out.emplace_back(std::move(*r));
          }
          return Status::Ok();
        }();
        Check(failed);
        py::list result;
        for (auto& item : out) {
          if (auto* r = std::get_if<ConversationReplay>(&item)) {
            result.append(ReplayedToDict(*r));
          } else {
            auto& [line, why] = std::get<1>(item);
            py::dict d;
            d["line"] = line;
            d["error"] = why.ToString();
            result.append(d);
          }
        }
        return result;
      },
      "path"_a, "pack"_a, py::kw_only(), "store"_a = py::none(), "tenant"_a = "default",
      "prefix"_a = "",
      "Replays a trace file (docs/trace-format.md) through sessions, as `taskledger replay` "
      "does; one dict per conversation (or {line, error} for a line that failed).");
}

}  // namespace taskledger::py
