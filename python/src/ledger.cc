// Bindings of rule packs, stores and ledger states: taskledger.RulePack,
// Store / MemoryStore / open_store, State, Entry and Turn, and the state
// block renderer. Store methods release the GIL around their I/O (a Store is
// thread-safe, so one store may serve sessions on many Python threads);
// State, Entry and Turn are immutable snapshots.
#include <chrono>
#include <utility>

#include <pybind11/stl.h>

#include "convert.h"
#include "objects.h"
#include "taskledger/base/clock.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/extraction_error.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/policy/call_class.h"
#include "taskledger/render/state_block.h"
#include "taskledger/render/visibility.h"

namespace taskledger::py {
namespace {

namespace py = pybind11;
using namespace py::literals;

struct PyEntry {
  Category category;
  std::string key;
  Entry entry;
};

ConversationId Conv(const std::string& tenant, const std::string& conversation) {
  return ConversationId{tenant, conversation};
}

Category CategoryArg(const std::string& name) {
  auto c = ParseCategory(name);
  if (!c)
    RaiseInvalid("unknown category \"" + name + "\" (fact, identifier, constraint, condition)");
  return *c;
}

py::dict LiveValues(const LedgerState& s, Category c) {
  py::dict out;
  const int64_t now = SystemClock().NowMs();
  for (const auto& [key, e] : s.of(c)) {
    if (e.LiveAt(s.version, now)) out[py::str(key)] = FromJson(e.value);
  }
  return out;
}

py::list Entries(const LedgerState& s, std::optional<std::string> category) {
  py::list out;
  for (Category c : kAllCategories) {
    if (category && CategoryArg(*category) != c) continue;
    for (const auto& [key, e] : s.of(c)) out.append(PyEntry{c, key, e});
  }
  return out;
}

// A turn's extraction errors as the dicts they are stored as.
py::list Errors(const std::vector<ExtractionError>& errors) {
  py::list out;
  for (const ExtractionError& e : errors) out.append(FromJson(EncodeExtractionError(e)));
  return out;
}

// Call records of a turn (a vector) or of a whole state (a CallList).
template <class Records>
py::list Calls(const Records& calls) {
  py::list out;
  for (const auto& c : calls) {
    py::dict d;
    d["turn"] = c.turn;
    d["call_id"] = c.call.id;
    d["tool"] = c.call.tool;
    d["arguments"] = FromJson(c.call.arguments);
    d["writes"] = c.writes;
    d["outcome"] = c.outcome;
    out.append(d);
  }
  return out;
}

std::unique_ptr<Store> OpenUrl(const std::string& url, uint32_t snapshot_every,
                               std::optional<double> retention_seconds, double connect_timeout,
                               double command_timeout) {
  StoreOptions options;
  if (snapshot_every == 0) RaiseInvalid("snapshot_every must be at least 1");
  options.snapshot_every = snapshot_every;
  if (retention_seconds) {
    if (*retention_seconds < 1) RaiseInvalid("retention_seconds must be at least 1");
    options.retention = std::chrono::seconds(static_cast<int64_t>(*retention_seconds));
  }
  if (connect_timeout <= 0 || command_timeout <= 0) RaiseInvalid("timeouts must be positive");
  Result<std::unique_ptr<Store>> store = Status::Internal("unset");
  // redis://, rediss:// (TLS), redis+cluster://, rediss+cluster://, unix://
  const bool redis = url.starts_with("redis://") || url.starts_with("rediss://") ||
                     url.starts_with("redis+cluster://") || url.starts_with("rediss+cluster://") ||
                     url.starts_with("unix://");
  {
    py::gil_scoped_release release;
    if (redis) {
      RedisOptions ro;
      ro.url = url;
      ro.connect_timeout = std::chrono::milliseconds(static_cast<int64_t>(connect_timeout * 1000));
      ro.command_timeout = std::chrono::milliseconds(static_cast<int64_t>(command_timeout * 1000));
      ro.store = options;
      store = OpenRedisStore(ro);
    } else {
      store = OpenStore(url, options);
    }
  }
  return Unwrap(std::move(store));
}

template <class F>
auto NoGil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

}  // namespace

std::string RenderState(const LedgerState& state, const std::string& format, size_t max_chars,
                        bool include_provenance, std::optional<int64_t> now_ms,
                        const RulePack* pack) {
  StateBlockOptions o;
  if (format == "plain") {
    o.format = StateBlockFormat::kPlain;
  } else if (format == "markdown") {
    o.format = StateBlockFormat::kMarkdown;
  } else if (format == "xml") {
    o.format = StateBlockFormat::kXml;
  } else if (format == "json") {
    o.format = StateBlockFormat::kJson;
  } else {
    RaiseInvalid("unknown format \"" + format + "\" (plain, markdown, xml, json)");
  }
  o.max_chars = max_chars;
  o.include_provenance = include_provenance;
  std::optional<RenderVisibility> visibility;
  if (pack != nullptr) {
    auto section = pack->manifest().find("render");
    auto parsed =
        RenderVisibility::FromJson(section == pack->manifest().end() ? nlohmann::json() : *section);
    if (!parsed) {
      Check(Status::InvalidArgument("pack.json \"render\" of " + pack->name() + ": " +
                                    parsed.error().message()));
    }
    visibility = std::move(parsed).value();
    o.visibility = &*visibility;
  }
  return Unwrap(RenderStateBlock(state, now_ms.value_or(SystemClock().NowMs()), o)).text;
}

void RegisterLedger(py::module_& m) {
  py::class_<PyPack>(m, "RulePack", "A loaded rule pack (immutable; share it between threads).")
      .def_static(
          "load",
          [](const std::string& path) {
            return PyPack{Unwrap(NoGil([&] { return RulePack::Load(path); }))};
          },
          "path"_a,
          "Loads rules/<pack>/ from `path`. Raises NotFound or InvalidArgument (with file and "
          "line).")
      .def_property_readonly("name", [](const PyPack& p) { return p.pack->name(); })
      .def_property_readonly(
          "version", [](const PyPack& p) { return p.pack->version(); },
          "SHA-256 (hex) over the pack's files.")
      .def_property_readonly(
          "denial_hint", [](const PyPack& p) { return p.pack->denial_hint(); },
          "What every denial tells the model to do next (pack.json \"denial_hint\").")
      .def_property_readonly("rules",
                             [](const PyPack& p) {
                               py::list out;
                               for (const auto& r : p.pack->rules()) out.append(r.id);
                               return out;
                             })
      .def(
          "classify",
          [](const PyPack& p, const std::string& tool) {
            return std::string(ToolClassName(PackClassOf(*p.pack, tool).tool_class));
          },
          "tool"_a, "\"read_only\", \"writes\" or \"unknown\".")
      .def("__repr__", [](const PyPack& p) {
        return "<taskledger.RulePack " + p.pack->name() + " " + p.pack->version().substr(0, 12) +
               ">";
      });

  py::class_<PyEntry>(m, "Entry", "One ledger entry with its provenance.")
      .def_property_readonly("category",
                             [](const PyEntry& e) { return std::string(CategoryName(e.category)); })
      .def_readonly("key", &PyEntry::key)
      .def_property_readonly("value", [](const PyEntry& e) { return FromJson(e.entry.value); })
      .def_property_readonly("turn", [](const PyEntry& e) { return e.entry.provenance.turn; })
      .def_property_readonly(
          "source",
          [](const PyEntry& e) { return std::string(SourceKindName(e.entry.provenance.source)); },
          "\"tool\", \"user\", \"agent\" or \"operator\".")
      .def_property_readonly("source_id",
                             [](const PyEntry& e) { return e.entry.provenance.source_id.str(); })
      .def_property_readonly("verified",
                             [](const PyEntry& e) { return e.entry.provenance.verified; })
      .def_property_readonly("rule_id",
                             [](const PyEntry& e) { return e.entry.provenance.rule_id.str(); })
      .def_property_readonly("pack_version",
                             [](const PyEntry& e) { return e.entry.provenance.pack_version.str(); })
      .def_property_readonly("expires_at_turn",
                             [](const PyEntry& e) { return e.entry.expires_at_turn; })
      .def_property_readonly("expires_at_ms",
                             [](const PyEntry& e) { return e.entry.expires_at_ms; })
      .def("to_dict",
           [](const PyEntry& e) {
             py::dict d = FromJson(EncodeEntry(e.entry));
             d["category"] = std::string(CategoryName(e.category));
             d["key"] = e.key;
             return d;
           })
      .def("__repr__", [](const PyEntry& e) {
        return "<taskledger.Entry " + std::string(CategoryName(e.category)) + " " + e.key + "=" +
               e.entry.value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ">";
      });

  py::class_<PyState>(m, "State", "One version of a conversation's task state (immutable).")
      .def_property_readonly("version", [](const PyState& s) { return s.state->version; })
      .def(
          "entries",
          [](const PyState& s, std::optional<std::string> category) {
            return Entries(*s.state, std::move(category));
          },
          "category"_a = py::none(), "Every entry (of one category if given), with provenance.")
      .def(
          "get",
          [](const PyState& s, const std::string& category, const std::string& key) -> py::object {
            const auto& map = s.state->of(CategoryArg(category));
            auto it = map.find(key);
            if (it == map.end()) return py::none();
            return py::cast(PyEntry{CategoryArg(category), key, it->second});
          },
          "category"_a, "key"_a, "The entry or None.")
      .def_property_readonly("facts",
                             [](const PyState& s) { return LiveValues(*s.state, Category::kFact); })
      .def_property_readonly(
          "identifiers",
          [](const PyState& s) { return LiveValues(*s.state, Category::kIdentifier); })
      .def_property_readonly(
          "constraints",
          [](const PyState& s) { return LiveValues(*s.state, Category::kConstraint); })
      .def_property_readonly(
          "conditions", [](const PyState& s) { return LiveValues(*s.state, Category::kCondition); })
      .def_property_readonly(
          "calls", [](const PyState& s) { return Calls(s.state->calls); },
          "Every tool call recorded up to this version: dicts of turn, call_id, tool, arguments, "
          "writes, outcome (\"ok\", \"error\", \"denied\").")
      .def(
          "render",
          [](const PyState& s, const std::string& format, size_t max_chars, bool include_provenance,
             std::optional<int64_t> now_ms, const PyPack* pack) {
            return RenderState(*s.state, format, max_chars, include_provenance, now_ms,
                               pack != nullptr ? pack->pack.get() : nullptr);
          },
          "format"_a = "plain", "max_chars"_a = 0, "include_provenance"_a = false,
          "now_ms"_a = py::none(), "pack"_a = py::none(),
          "The task-state block for a prompt; with `pack`, what its pack.json \"render\" marks "
          "internal is left out and redacted fields read \"[redacted]\".")
      .def("to_dict", [](const PyState& s) { return FromJson(EncodeState(*s.state)); })
      .def_static(
          "from_dict",
          [](py::handle d) {
            return PyState{
                std::make_shared<const LedgerState>(Unwrap(DecodeState(ToJson(d, "the state"))))};
          },
          "d"_a, "The State that to_dict() (or serve's /v1/state) encoded. Raises Corruption.")
      .def("__len__", [](const PyState& s) { return s.state->size(); });

  py::class_<PyTurn>(m, "Turn", "One committed (or staged) turn: what it changed and decided.")
      .def_property_readonly("turn", [](const PyTurn& t) { return t.turn.turn; })
      .def_property_readonly("committed_at_ms",
                             [](const PyTurn& t) { return t.turn.committed_at_ms; })
      .def_property_readonly("updates",
                             [](const PyTurn& t) {
                               py::list out;
                               for (const auto& u : t.turn.updates)
                                 out.append(FromJson(EncodeUpdate(u)));
                               return out;
                             })
      .def_property_readonly("calls", [](const PyTurn& t) { return Calls(t.turn.calls); })
      .def_property_readonly(
          "decisions",
          [](const PyTurn& t) {
            py::list out;
            for (const DecisionRecord& d : t.turn.decisions)
              out.append(FromJson(EncodeDecision(d)));
            return out;
          },
          "The decision-log records (dicts) of every check in the turn.")
      .def_property_readonly("errors", [](const PyTurn& t) { return Errors(t.turn.errors); })
      .def("to_dict", [](const PyTurn& t) { return FromJson(EncodeTurn(t.turn)); })
      .def_static(
          "from_dict",
          [](py::handle d) { return PyTurn{Unwrap(DecodeTurn(ToJson(d, "the turn")))}; }, "d"_a,
          "The Turn that to_dict() (or serve's /v1/versions) encoded. Raises Corruption.");

  py::class_<PyStore>(m, "Store",
                      "Where conversations live: memory or Redis. Thread-safe; share one "
                      "between sessions and threads.")
      .def(
          "head",
          [](PyStore& s, const std::string& tenant, const std::string& conversation) {
            return Unwrap(NoGil([&] { return s.store->Head(Conv(tenant, conversation)); }));
          },
          "tenant"_a, "conversation"_a, "The latest committed version (0: never written).")
      .def(
          "read_version",
          [](PyStore& s, const std::string& tenant, const std::string& conversation,
             uint64_t version) {
            auto st = Unwrap(
                NoGil([&] { return s.store->ReadVersion(Conv(tenant, conversation), version); }));
            return PyState{std::make_shared<const LedgerState>(std::move(st))};
          },
          "tenant"_a, "conversation"_a, "version"_a)
      .def(
          "read_turns",
          [](PyStore& s, const std::string& tenant, const std::string& conversation, uint64_t first,
             std::optional<uint64_t> last) {
            auto turns = Unwrap(NoGil([&]() -> Result<std::vector<TurnRecord>> {
              ConversationId id = Conv(tenant, conversation);
              uint64_t to = 0;
              if (last) {
                to = *last;
              } else {
                auto head = s.store->Head(id);
                if (!head) return head.error();
                to = *head;
              }
              if (to < first) return std::vector<TurnRecord>{};
              return s.store->ReadTurns(id, first, to);
            }));
            py::list out;
            for (auto& t : turns) out.append(PyTurn{std::move(t)});
            return out;
          },
          "tenant"_a, "conversation"_a, "first"_a = 1, "last"_a = py::none(),
          "Turn records first..last (default: up to the head).")
      .def(
          "list_conversations",
          [](PyStore& s, const std::string& tenant) {
            return Unwrap(NoGil([&] { return s.store->ListConversations(tenant); }));
          },
          "tenant"_a)
      .def(
          "drop_conversation",
          [](PyStore& s, const std::string& tenant, const std::string& conversation) {
            Check(NoGil([&] { return s.store->DropConversation(Conv(tenant, conversation)); }));
          },
          "tenant"_a, "conversation"_a);

  m.def(
      "MemoryStore",
      [](uint32_t snapshot_every) {
        if (snapshot_every == 0) RaiseInvalid("snapshot_every must be at least 1");
        StoreOptions o;
        o.snapshot_every = snapshot_every;
        return PyStore{std::shared_ptr<Store>(NewMemoryStore(o))};
      },
      "snapshot_every"_a = 16, "An in-process store (the embedded default).");
  m.def(
      "open_store",
      [](const std::string& url, uint32_t snapshot_every, std::optional<double> retention_seconds,
         double connect_timeout, double command_timeout) {
        return PyStore{std::shared_ptr<Store>(
            OpenUrl(url, snapshot_every, retention_seconds, connect_timeout, command_timeout))};
      },
      "url"_a, "snapshot_every"_a = 16, "retention_seconds"_a = py::none(),
      "connect_timeout"_a = 1.0, "command_timeout"_a = 1.0,
      "Opens \"memory\" or a redis:// / rediss:// / redis+cluster:// / unix:// URL. Raises "
      "Unavailable, Timeout or "
      "InvalidArgument.");
  m.def(
      "render",
      [](const PyState& s, const std::string& format, size_t max_chars, bool include_provenance,
         std::optional<int64_t> now_ms, const PyPack* pack) {
        return RenderState(*s.state, format, max_chars, include_provenance, now_ms,
                           pack != nullptr ? pack->pack.get() : nullptr);
      },
      "state"_a, "format"_a = "plain", "max_chars"_a = 0, "include_provenance"_a = false,
      "now_ms"_a = py::none(), "pack"_a = py::none(),
      "State.render(); with `pack`, its pack.json \"render\" visibility applies.");
}

}  // namespace taskledger::py
