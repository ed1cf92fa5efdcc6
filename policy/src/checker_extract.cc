// PolicyChecker's extractors (see checker.h): which of a pack's extractors
// apply to a tool output or a user message, running each in the sandbox with
// its own instruction budget, and turning what it returned into validated
// ledger updates with their provenance. A failing extractor fails alone (its
// run carries the error); the others still run. Not thread-safe.
#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include "internal/checker_impl.h"
#include "taskledger/pack/lua/lua_json.h"

namespace taskledger {

using lua::Sandbox;

namespace {

constexpr size_t kMaxExtractedUpdates = 10000;

// Where the updates of one extractor run come from.
struct ExtractOrigin {
  SourceKind source;
  SharedString source_id;
  bool verified;
};

Result<Update> UpdateFromJson(const nlohmann::json& u, const ExtractOrigin& origin,
                              const SharedString& extractor, const SharedString& pack_version,
                              int64_t now_ms) {
  if (!u.is_object()) return Status::InvalidArgument("each update must be a table");
  for (const auto& [k, v] : u.items()) {
    if (k != "category" && k != "key" && k != "value" && k != "op" && k != "expire_turns" &&
        k != "expire_seconds") {
      return Status::InvalidArgument("unknown update field '" + k +
                                     "' (fields: category, key, value, op, expire_turns, "
                                     "expire_seconds)");
    }
  }
  Update out;
  auto cat = u.find("category");
  std::optional<Category> c;
  if (cat != u.end() && cat->is_string()) c = ParseCategory(cat->get<std::string>());
  if (!c)
    return Status::InvalidArgument(
        "update category must be fact, identifier, constraint or condition");
  out.category = *c;
  auto key = u.find("key");
  if (key == u.end() || !key->is_string() || key->get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument("update key must be a non-empty string");
  }
  out.key = key->get<std::string>();
  std::string op = u.value("op", std::string("set"));
  std::optional<UpdateOp> parsed = ParseUpdateOp(op);
  if (!parsed) {
    return Status::InvalidArgument("update op must be set, remove or expire, not '" + op + "'");
  }
  out.op = *parsed;
  if (out.op == UpdateOp::kSet) {
    auto v = u.find("value");
    if (v == u.end() || v->is_null()) {
      return Status::InvalidArgument("update of '" + out.key + "' has no value (op set)");
    }
    out.value = *v;
  }
  if (auto t = u.find("expire_turns"); t != u.end()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 1) {
      return Status::InvalidArgument("expire_turns must be an integer >= 1");
    }
    out.expire_after_turns = t->get<uint64_t>();
  }
  if (auto s = u.find("expire_seconds"); s != u.end()) {
    if (!s->is_number() || !(s->get<double>() > 0) || s->get<double>() > 1e11) {
      return Status::InvalidArgument("expire_seconds must be a positive number");
    }
    out.expire_at_ms = now_ms + std::llround(s->get<double>() * 1000.0);
  }
  out.provenance.source = origin.source;
  out.provenance.source_id = origin.source_id;
  out.provenance.verified = origin.verified;
  out.provenance.rule_id = extractor;
  out.provenance.pack_version = pack_version;
  return out;
}

// Runs every extractor `applies` accepts, each with its own budget, its
// arguments pushed by `push_args`; one result per extractor run.
template <typename Applies, typename PushArgs>
std::vector<ExtractorRun> RunMatching(const lua::CompiledPack& pack, int64_t budget,
                                      const SharedString& pack_version, const Applies& applies,
                                      const PushArgs& push_args, const ExtractOrigin& origin,
                                      int64_t now_ms) {
  std::vector<ExtractorRun> runs;
  Sandbox& sb = *pack.sandbox;
  for (const auto& x : pack.extractors) {
    if (!applies(x)) continue;
    ExtractorRun& run = runs.emplace_back();
    run.extractor_id = x.info.id;
    const SharedString extractor_id = x.info.id;
    try {
      nlohmann::json result;
      Status failure;
      sb.ArmBudget(budget);
      Status st = sb.Protected([&](lua_State* L) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, x.ref);
        push_args(L);
        failure = sb.Call(2, 1);
        if (failure.ok()) result = lua::ToJson(L, -1);
      });
      sb.DisarmBudget();
      // The extractor ran but its result does not convert to JSON (cycle,
      // depth, NaN, invalid UTF-8): the update is invalid, not the run.
      if (!st.ok() && failure.ok()) st = Status::InvalidArgument(st.message());
      if (st.ok()) st = failure;
      if (!st.ok()) {
        sb.Recover();
        run.updates = Status(st.code(), "extractor " + x.info.id + ": " + st.message());
        continue;
      }
      std::vector<Update> updates;
      if (!result.is_null()) {
        if (!result.is_array()) {
          run.updates = Status::InvalidArgument("extractor " + x.info.id +
                                                ": extract must return an array of updates");
          continue;
        }
        if (result.size() > kMaxExtractedUpdates) {
          run.updates = Status::LimitExceeded("extractor " + x.info.id + ": more than " +
                                              std::to_string(kMaxExtractedUpdates) + " updates");
          continue;
        }
        for (const auto& u : result) {
          Result<Update> up = UpdateFromJson(u, origin, extractor_id, pack_version, now_ms);
          if (!up) {
            updates.clear();
            run.updates =
                Status::InvalidArgument("extractor " + x.info.id + ": " + up.error().message());
            break;
          }
          updates.push_back(std::move(up.value()));
        }
        if (!run.updates.has_value()) continue;
      }
      run.updates = std::move(updates);
    } catch (const std::exception& e) {
      sb.DisarmBudget();
      run.updates = Status::Internal("extractor " + x.info.id + ": " + e.what());
    }
  }
  return runs;
}

}  // namespace

bool PolicyChecker::HasExtractors(std::string_view tool) const {
  for (const auto& x : impl_->runtime->compiled->extractors) {
    for (const std::string& glob : x.info.tools) {
      if (GlobMatch(glob, tool)) return true;
    }
  }
  return false;
}

bool PolicyChecker::HasUserExtractors() const {
  return std::ranges::any_of(impl_->runtime->compiled->extractors,
                             [](const auto& x) { return x.info.user; });
}

std::vector<ExtractorRun> PolicyChecker::RunExtractors(const ProposedCall& call,
                                                       const nlohmann::json& output,
                                                       int64_t now_ms) {
  const ExtractOrigin origin{SourceKind::kToolOutput, call.tool + "#" + call.id, true};
  return RunMatching(
      *impl_->runtime->compiled, impl_->limits.instruction_budget, impl_->pack_version,
      [&](const lua::CompiledExtractor& x) {
        return std::ranges::any_of(x.info.tools,
                                   [&](const std::string& g) { return GlobMatch(g, call.tool); });
      },
      [&](lua_State* L) {
        lua::PushReadOnly(L, output);
        impl_->runtime->call_view.Push(L, call);
      },
      origin, now_ms);
}

std::vector<ExtractorRun> PolicyChecker::RunUserExtractors(std::string_view text, int64_t now_ms) {
  static const SharedString kUser = "user";
  const ExtractOrigin origin{SourceKind::kUserMessage, kUser, false};
  return RunMatching(
      *impl_->runtime->compiled, impl_->limits.instruction_budget, impl_->pack_version,
      [](const lua::CompiledExtractor& x) { return x.info.user; },
      [&](lua_State* L) {
        lua_pushlstring(L, text.data(), text.size());
        lua_pushnil(L);
      },
      origin, now_ms);
}

}  // namespace taskledger
