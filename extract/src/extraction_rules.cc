// Loading extract.json: strict validation and compilation into the form the
// Extractor evaluates (internal/compiled_rules.h). Runs once per pack load;
// the result is immutable and shared between threads.
#include "taskledger/extract/extraction_rules.h"

#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include "internal/compiled_rules.h"

namespace taskledger {
namespace {

using extract_internal::TemplateScope;
using nlohmann::json;

constexpr size_t kMaxSpecBytes = 16u << 20;
// Deeper limits would let outputs reach code that walks JSON recursively
// (serialisation, comparison, the Lua bridge) with a deep stack.
// Regular expressions are quadratic on adversarial text (see ExtractionLimits).
constexpr int64_t kMaxTextCeiling = 64 << 10;

Status Bad(const std::string& where, const std::string& why) {
  return Status::InvalidArgument("extract.json: " + where + ": " + why);
}

Status CheckFields(const json& obj, const std::string& where,
                   std::initializer_list<std::string_view> allowed) {
  for (const auto& [name, _] : obj.items()) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || a == name;
    if (!ok) return Bad(where, "unknown field '" + name + "'");
  }
  return Status::Ok();
}

Result<extract_internal::Template> ParseTemplate(const json& v, const std::string& where,
                                                 const char* field, TemplateScope scope) {
  if (!v.is_string()) return Bad(where, std::string(field) + " must be a string");
  auto t = extract_internal::Template::Parse(v.get<std::string>(), scope);
  if (!t.has_value()) return Bad(where, t.error().message());
  return t;
}

Status ParseExpiry(const json& e, const std::string& where, TemplateScope scope,
                   extract_internal::ExpirySpec& out) {
  using Kind = extract_internal::ExpirySpec::Kind;
  if (!e.is_object() || e.empty()) return Bad(where, "expire must be a non-empty object");
  if (Status s = CheckFields(e, where + " expire", {"turns", "seconds", "seconds_from", "unit"});
      !s.ok()) {
    return s;
  }
  int kinds = e.contains("turns") + e.contains("seconds") + e.contains("seconds_from");
  if (kinds != 1) return Bad(where, "expire needs exactly one of turns, seconds, seconds_from");
  if (e.contains("unit") && !e.contains("seconds_from")) {
    return Bad(where, "expire.unit only goes with seconds_from");
  }
  if (e.contains("turns")) {
    const json& t = e["turns"];
    if (!t.is_number_integer() || t.get<int64_t>() < 1) {
      return Bad(where, "expire.turns must be an integer >= 1");
    }
    out.kind = Kind::kTurns;
    out.turns = t.get<uint64_t>();
  } else if (e.contains("seconds")) {
    const json& t = e["seconds"];
    if (!t.is_number() || t.get<double>() < 0 || t.get<double>() > 1e12) {
      return Bad(where, "expire.seconds must be a number in 0..1e12");
    }
    out.kind = Kind::kSeconds;
    out.seconds = t.get<double>();
  } else {
    const json& f = e["seconds_from"];
    if (!f.is_string()) return Bad(where, "expire.seconds_from must be a string");
    std::string body = f.get<std::string>();
    // "/abs" and "./rel" for JSON outputs, "$N" for regex captures.
    auto t = extract_internal::Template::Parse("{" + body + "}", scope);
    if (!t.has_value()) return Bad(where, "expire.seconds_from: " + t.error().message());
    out.kind = Kind::kSecondsFrom;
    out.from = std::move(t).value();
    if (e.contains("unit") && !e["unit"].is_string())
      return Bad(where, "expire.unit must be a string");
    std::string unit = e.value("unit", std::string("seconds"));
    if (unit == "seconds") {
      out.unit_seconds = 1;
    } else if (unit == "minutes") {
      out.unit_seconds = 60;
    } else if (unit == "hours") {
      out.unit_seconds = 3600;
    } else if (unit == "days") {
      out.unit_seconds = 86400;
    } else {
      return Bad(where, "expire.unit must be seconds, minutes, hours or days");
    }
  }
  return Status::Ok();
}

// The fields every kind of rule shares. `key_required` is false only for a
// confirmation pattern, whose target is fixed.
Status ParseUpdateSpec(const json& r, const std::string& where, TemplateScope scope,
                       extract_internal::UpdateSpec& out) {
  if (r.contains("category")) {
    if (!r["category"].is_string()) return Bad(where, "category must be a string");
    auto c = ParseCategory(r["category"].get<std::string>());
    if (!c) return Bad(where, "unknown category '" + r["category"].get<std::string>() + "'");
    out.category = *c;
  } else {
    return Bad(where, "category is required");
  }
  if (!r.contains("key")) return Bad(where, "key is required");
  auto key = ParseTemplate(r["key"], where, "key", scope);
  if (!key.has_value()) return key.error();
  out.key = std::move(key).value();
  if (out.key.text().empty()) return Bad(where, "key is empty");

  if (r.contains("value")) {
    const json& v = r["value"];
    if (v.is_string()) {
      auto t = ParseTemplate(v, where, "value", scope);
      if (!t.has_value()) return t.error();
      out.value.kind = extract_internal::ValueSpec::Kind::kTemplate;
      out.value.tmpl = std::move(t).value();
    } else {
      out.value.kind = extract_internal::ValueSpec::Kind::kLiteral;
      out.value.literal = v;
    }
  } else if (scope != TemplateScope::kJsonOutput) {
    out.value.kind = extract_internal::ValueSpec::Kind::kTemplate;
    out.value.tmpl = extract_internal::Template::Parse("{$0}", scope).value();
  }
  if (r.contains("coerce")) {
    const json& c = r["coerce"];
    std::string name = c.is_string() ? c.get<std::string>() : "";
    if (name == "string") {
      out.coerce = extract_internal::Coercion::kString;
    } else if (name == "number") {
      out.coerce = extract_internal::Coercion::kNumber;
    } else if (name == "integer") {
      out.coerce = extract_internal::Coercion::kInteger;
    } else if (name == "boolean") {
      out.coerce = extract_internal::Coercion::kBoolean;
    } else {
      return Bad(where, "coerce must be string, number, integer or boolean");
    }
  }
  if (r.contains("expire")) {
    if (Status s = ParseExpiry(r["expire"], where, scope, out.expire); !s.ok()) return s;
  }
  for (const char* flag : {"verified", "required"}) {
    if (r.contains(flag) && !r[flag].is_boolean()) {
      return Bad(where, std::string(flag) + " must be true or false");
    }
  }
  out.verified = r.value("verified", true);
  out.required = r.value("required", false);
  return Status::Ok();
}

// "store": "whole" (default: an object or array is one entry) or "fields"
// (one entry per scalar below it; see extract_internal::SplitFields).
Status ParseStore(const json& r, const std::string& where, extract_internal::Mapping& m) {
  if (!r.contains("store")) return Status::Ok();
  const json& s = r["store"];
  if (s == "whole") return Status::Ok();
  if (s != "fields") return Bad(where, "store must be \"whole\" or \"fields\"");
  if (m.spec.coerce != extract_internal::Coercion::kNone) {
    return Bad(where, "coerce converts one value; it cannot be used with \"store\": \"fields\"");
  }
  m.store_fields = true;
  return Status::Ok();
}

Result<extract_internal::PosixRegex> ParseRegex(const json& r, const char* field,
                                                const std::string& where) {
  if (!r[field].is_string()) return Bad(where, std::string(field) + " must be a string");
  if (r.contains("icase") && !r["icase"].is_boolean())
    return Bad(where, "icase must be true or false");
  auto re =
      extract_internal::PosixRegex::Compile(r[field].get<std::string>(), r.value("icase", false));
  if (!re.has_value()) return Bad(where, re.error().message());
  return re;
}

Status ParseId(const json& r, const std::string& where, std::set<std::string>& ids,
               std::string& out) {
  if (!r.is_object()) return Bad(where, "a rule must be an object");
  if (!r.contains("id") || !r["id"].is_string() || r["id"].get<std::string>().empty()) {
    return Bad(where, "id must be a non-empty string");
  }
  out = r["id"].get<std::string>();
  if (!ids.insert(out).second) return Bad(where, "duplicate rule id '" + out + "'");
  return Status::Ok();
}

// Rule ids are unique within one tool's list (a pack may give the same rule
// to several tools that return the same object) and within "user".
Status ParseToolRules(const std::string& tool, const json& list, extract_internal::ToolRules& out) {
  if (!list.is_array()) return Bad("tools." + tool, "must be an array of rules");
  std::set<std::string> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& r = list[i];
    std::string id;
    if (Status s = ParseId(r, "tools." + tool + "[" + std::to_string(i) + "]", ids, id); !s.ok()) {
      return s;
    }
    std::string where = "tools." + tool + " rule '" + id + "'";
    bool is_path = r.contains("path"), is_text = r.contains("text");
    if (is_path == is_text) return Bad(where, "needs exactly one of path and text");
    if (is_path) {
      if (Status s = CheckFields(r, where,
                                 {"id", "path", "category", "key", "value", "coerce", "expire",
                                  "verified", "required", "description", "store"});
          !s.ok()) {
        return s;
      }
      extract_internal::Mapping m;
      if (!r["path"].is_string()) return Bad(where, "path must be a string");
      auto p = extract_internal::CompiledPointer::Parse(r["path"].get<std::string>(), true);
      if (!p.has_value()) return Bad(where, p.error().message());
      m.path = std::move(p).value();
      if (Status s = ParseUpdateSpec(r, where, TemplateScope::kJsonOutput, m.spec); !s.ok()) {
        return s;
      }
      if (Status s = ParseStore(r, where, m); !s.ok()) return s;
      m.spec.id = id;
      extract_internal::InternPointers(m, out.pointers);
      out.mappings.push_back(std::move(m));
    } else {
      if (Status s = CheckFields(r, where,
                                 {"id", "text", "icase", "category", "key", "value", "coerce",
                                  "expire", "verified", "required", "description"});
          !s.ok()) {
        return s;
      }
      auto re = ParseRegex(r, "text", where);
      if (!re.has_value()) return re.error();
      extract_internal::TextRule t{{}, std::move(re).value()};
      if (Status s = ParseUpdateSpec(r, where, TemplateScope::kTextOutput, t.spec); !s.ok()) {
        return s;
      }
      t.spec.id = id;
      out.text_rules.push_back(std::move(t));
    }
  }
  return Status::Ok();
}

Status ParseUserPatterns(const json& list, std::vector<extract_internal::UserPattern>& out) {
  if (!list.is_array()) return Bad("user", "must be an array of patterns");
  std::set<std::string> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& r = list[i];
    std::string id;
    if (Status s = ParseId(r, "user[" + std::to_string(i) + "]", ids, id); !s.ok()) return s;
    std::string where = "rule '" + id + "'";
    if (!r.contains("pattern")) return Bad(where, "pattern is required");
    auto re = ParseRegex(r, "pattern", where);
    if (!re.has_value()) return re.error();
    extract_internal::UserPattern p{{}, std::move(re).value(), false};
    if (r.contains("confirmation") && !r["confirmation"].is_boolean()) {
      return Bad(where, "confirmation must be true or false");
    }
    p.confirmation = r.value("confirmation", false);
    if (p.confirmation) {
      // The target of a confirmation is fixed: the condition "confirmation".
      if (Status s =
              CheckFields(r, where, {"id", "pattern", "icase", "confirmation", "description"});
          !s.ok()) {
        return s;
      }
      p.spec.category = Category::kCondition;
      p.spec.key =
          extract_internal::Template::Parse("confirmation", TemplateScope::kUserMessage).value();
    } else {
      if (Status s = CheckFields(r, where,
                                 {"id", "pattern", "icase", "confirmation", "category", "key",
                                  "value", "coerce", "expire", "description"});
          !s.ok()) {
        return s;
      }
      if (Status s = ParseUpdateSpec(r, where, TemplateScope::kUserMessage, p.spec); !s.ok()) {
        return s;
      }
    }
    p.spec.id = id;
    p.spec.verified = false;  // a user's word is a claim, never evidence
    out.push_back(std::move(p));
  }
  return Status::Ok();
}

Status ParseLimits(const json& l, ExtractionLimits& out) {
  if (!l.is_object()) return Bad("limits", "must be an object");
  if (Status s = CheckFields(l, "limits", {"max_output_bytes", "max_depth", "max_text_bytes"});
      !s.ok()) {
    return s;
  }
  if (l.contains("max_text_bytes")) {
    const json& v = l["max_text_bytes"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxTextCeiling) {
      return Bad("limits",
                 "max_text_bytes must be an integer in 1.." + std::to_string(kMaxTextCeiling));
    }
    out.max_text_bytes = v.get<size_t>();
  }
  if (l.contains("max_output_bytes")) {
    const json& v = l["max_output_bytes"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1) {
      return Bad("limits", "max_output_bytes must be an integer >= 1");
    }
    out.max_output_bytes = v.get<size_t>();
  }
  if (l.contains("max_depth")) {
    Result<int> depth = ParseMaxJsonDepth(l["max_depth"]);
    if (!depth) return Bad("limits", depth.error().message());
    out.max_depth = *depth;
  }
  return Status::Ok();
}

}  // namespace

ExtractionRules::ExtractionRules(std::unique_ptr<Compiled> compiled, ExtractionLimits limits,
                                 std::string pack_version)
    : compiled_(std::move(compiled)), limits_(limits), pack_version_(std::move(pack_version)) {}

ExtractionRules::~ExtractionRules() = default;

std::shared_ptr<const ExtractionRules> ExtractionRules::Empty() {
  return std::shared_ptr<const ExtractionRules>(
      new ExtractionRules(std::make_unique<Compiled>(), ExtractionLimits{}, ""));
}

Result<std::shared_ptr<const ExtractionRules>> ExtractionRules::FromJson(const json& spec,
                                                                         std::string pack_version) {
  if (!spec.is_object()) return Bad("top level", "must be an object");
  if (Status s = CheckFields(spec, "top level", {"tools", "user", "limits", "description"});
      !s.ok()) {
    return s;
  }
  auto compiled = std::make_unique<Compiled>();
  ExtractionLimits limits;
  if (spec.contains("tools")) {
    if (!spec["tools"].is_object()) return Bad("tools", "must be an object keyed by tool name");
    for (const auto& [tool, list] : spec["tools"].items()) {
      extract_internal::ToolRules rules;
      if (Status s = ParseToolRules(tool, list, rules); !s.ok()) return s;
      if (tool.find_first_of("*?") != std::string::npos) {
        compiled->globs.emplace_back(tool, std::move(rules));
      } else {
        compiled->exact.emplace(tool, std::move(rules));
      }
    }
  }
  if (spec.contains("user")) {
    if (Status s = ParseUserPatterns(spec["user"], compiled->user); !s.ok()) return s;
  }
  if (spec.contains("limits")) {
    if (Status s = ParseLimits(spec["limits"], limits); !s.ok()) return s;
  }
  return std::shared_ptr<const ExtractionRules>(
      new ExtractionRules(std::move(compiled), limits, std::move(pack_version)));
}

Result<std::shared_ptr<const ExtractionRules>> ExtractionRules::Load(
    const std::filesystem::path& pack_dir, std::string pack_version) {
  std::error_code ec;
  if (!std::filesystem::is_directory(pack_dir, ec)) {
    return Status::NotFound("rule pack folder " + pack_dir.string() + " does not exist");
  }
  std::filesystem::path file = pack_dir / "extract.json";
  if (!std::filesystem::exists(file, ec)) {
    return std::shared_ptr<const ExtractionRules>(new ExtractionRules(
        std::make_unique<Compiled>(), ExtractionLimits{}, std::move(pack_version)));
  }
  auto size = std::filesystem::file_size(file, ec);
  if (ec) return Status::Unavailable("cannot read " + file.string() + ": " + ec.message());
  if (size > kMaxSpecBytes) return Status::LimitExceeded(file.string() + " is larger than 16 MiB");
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return Status::Unavailable("cannot read " + file.string());
  json spec = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded()) return Status::InvalidArgument(file.string() + " is not valid JSON");
  return FromJson(spec, std::move(pack_version));
}

Result<std::shared_ptr<const ExtractionRules>> ExtractionRules::FromPack(const RulePack& pack) {
  if (pack.extract_spec() == nullptr) {
    return std::shared_ptr<const ExtractionRules>(
        new ExtractionRules(std::make_unique<Compiled>(), ExtractionLimits{}, pack.version()));
  }
  return FromJson(*pack.extract_spec(), pack.version());
}

bool ExtractionRules::HasRulesFor(std::string_view tool) const {
  bool any = false;
  compiled_->ForEachToolRules(tool, [&](const extract_internal::ToolRules& r) {
    any = any || !r.mappings.empty() || !r.text_rules.empty();
  });
  return any;
}

size_t ExtractionRules::size() const {
  size_t n = compiled_->user.size();
  for (const auto& [_, r] : compiled_->exact) n += r.mappings.size() + r.text_rules.size();
  for (const auto& [_, r] : compiled_->globs) n += r.mappings.size() + r.text_rules.size();
  return n;
}

}  // namespace taskledger
