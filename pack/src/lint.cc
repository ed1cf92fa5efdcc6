// Static checks on a rule pack (see include/taskledger/pack/lint.h): tool
// coverage from pack.json, rule{} and extract.json, and a best-effort scan of
// the Lua source for ledger reads no extraction rule produces. The Lua
// tokenizer is in lint_tokens.cc, the facts-table check in lint_facts.cc.
#include "taskledger/pack/lint.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

#include "internal/lint_parts.h"

namespace taskledger {

namespace {

bool Overlap(const std::string& a, const std::string& b) {
  return GlobMatch(a, b) || GlobMatch(b, a);
}

std::vector<std::string> ManifestList(const RulePack& pack, const char* list) {
  std::vector<std::string> out;
  const nlohmann::json& m = pack.manifest();
  if (!m.contains("tools") || !m["tools"].contains(list)) return out;
  for (const auto& t : m["tools"][list]) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  return out;
}

bool AnyOverlap(const std::string& pattern, const std::vector<std::string>& list) {
  for (const std::string& e : list) {
    if (Overlap(pattern, e)) return true;
  }
  return false;
}

// --- Lua source scan ------------------------------------------------------

using lint_internal::Token;
using lint_internal::Tokenize;

using Span = std::pair<size_t, size_t>;  // [begin, end) into the tokens

// The arguments of the call whose "(" is at tokens[open]; sets `end` past ")".
std::vector<Span> CallArgs(const std::vector<Token>& t, size_t open, size_t& end) {
  std::vector<Span> args;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open; i < t.size(); ++i) {
    if (t[i].kind != Token::kPunct) continue;
    const std::string& p = t[i].text;
    if (p == "(" || p == "{" || p == "[") {
      ++depth;
    } else if (p == ")" || p == "}" || p == "]") {
      if (--depth == 0) {
        if (i > start) args.emplace_back(start, i);
        end = i + 1;
        return args;
      }
    } else if (p == "," && depth == 1) {
      args.emplace_back(start, i);
      start = i + 1;
    }
  }
  end = t.size();
  return args;
}

std::optional<std::string> ArgPattern(const std::vector<Token>& t, Span a);

// std.key(a, b, c) as "a.b.c", a non-literal argument as "{?}".
std::string KeyCallPattern(const std::vector<Token>& t, size_t open, size_t& end) {
  std::string key;
  for (const Span& a : CallArgs(t, open, end)) {
    if (!key.empty()) key += '.';
    const bool literal = a.second == a.first + 1 && t[a.first].kind == Token::kString;
    key += literal ? t[a.first].text : "{?}";
  }
  return key;
}

// A key argument as a pattern: string literals kept, everything else "{?}";
// nullopt when the argument holds no literal text at all.
std::optional<std::string> ArgPattern(const std::vector<Token>& t, Span a) {
  std::string out;
  bool literal = false;
  size_t i = a.first;
  while (i < a.second) {
    size_t piece_end = i;
    int depth = 0;
    while (piece_end < a.second && !(depth == 0 && t[piece_end].kind == Token::kConcat)) {
      const std::string& p = t[piece_end].text;
      if (t[piece_end].kind == Token::kPunct) depth += (p == "(" || p == "{" || p == "[") ? 1 : 0;
      if (t[piece_end].kind == Token::kPunct) depth -= (p == ")" || p == "}" || p == "]") ? 1 : 0;
      ++piece_end;
    }
    if (piece_end == i + 1 && t[i].kind == Token::kString) {
      out += t[i].text;
      literal = true;
    } else if (t[i].kind == Token::kName && t[i].text == "std.key" && i + 1 < a.second &&
               t[i + 1].text == "(") {
      size_t end = i;
      out += KeyCallPattern(t, i + 1, end);
      literal = true;
    } else {
      out += "{?}";
    }
    i = piece_end + 1;
  }
  if (!literal) return std::nullopt;
  return out;
}

std::vector<std::string> Segments(const std::string& key) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t dot = key.find('.');; dot = key.find('.', start)) {
    out.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

bool Wild(const std::string& seg) { return seg.find('{') != std::string::npos; }

struct Template {
  std::string category;
  std::vector<std::string> segs;
};

// Whether read segments r[i..] match template segments t[j..]. A read segment
// that is exactly "{?}" (a variable lint cannot follow, such as a key prefix
// built earlier: `local order = std.key("order", id)`) stands for one or more
// segments; any other wild segment for exactly one. With `prefix`, the read
// only has to match the start of the template, its last segment a prefix of
// the template's segment.
bool SegmentsMatch(const std::vector<std::string>& r, size_t i, const std::vector<std::string>& t,
                   size_t j, bool prefix) {
  if (i == r.size()) return prefix || j == t.size();
  if (j == t.size()) return false;
  const std::string& a = r[i];
  const std::string& b = t[j];
  if (a == "{?}") {
    for (size_t k = j + 1; k <= t.size(); ++k) {
      if (SegmentsMatch(r, i + 1, t, k, prefix)) return true;
    }
    return false;
  }
  const bool last_prefix = prefix && i + 1 == r.size();
  if (!(Wild(a) || Wild(b) || a == b || (last_prefix && b.rfind(a, 0) == 0))) return false;
  return SegmentsMatch(r, i + 1, t, j + 1, prefix);
}

// A read: `pattern` of `category` (empty: any), matching whole keys or (prefix)
// the start of keys.
bool Produced(const std::vector<Template>& templates, const std::string& category,
              const std::string& pattern, bool prefix) {
  std::vector<std::string> r = Segments(pattern);
  if (prefix && !r.empty() && r.back().empty()) r.pop_back();
  for (const Template& tp : templates) {
    if (!category.empty() && !tp.category.empty() && tp.category != category) continue;
    if (SegmentsMatch(r, 0, tp.segs, 0, prefix)) return true;
  }
  return false;
}

std::vector<Template> ExtractTemplates(const RulePack& pack) {
  std::vector<Template> out;
  const nlohmann::json* spec = pack.extract_spec();
  if (spec == nullptr) return out;
  auto add = [&out](const nlohmann::json& rule) {
    if (!rule.is_object() || !rule.contains("key") || !rule["key"].is_string()) return;
    out.push_back(
        {rule.value("category", std::string()), Segments(rule["key"].get<std::string>())});
  };
  if (auto tools = spec->find("tools"); tools != spec->end() && tools->is_object()) {
    for (const auto& [tool, rules] : tools->items()) {
      for (const auto& r : rules) add(r);
    }
  }
  if (auto user = spec->find("user"); user != spec->end() && user->is_array()) {
    for (const auto& r : *user) add(r);
  }
  return out;
}

// Adds the keys the pack's Lua extractors write: every `key = <expr>` field
// of a table constructor in a file declaring an extractor, with the
// `category = "<literal>"` of the same constructor (any category if it is not
// a literal). False when a key holds no literal text at all: that extractor
// may write any key, so no read can be called unfed.
bool ExtractorTemplates(const RulePack& pack, std::vector<Template>& out) {
  std::set<std::string> files;
  for (const ExtractorInfo& e : pack.extractors()) files.insert(e.file);
  std::vector<const PackFile*> sources = pack.lua_files();
  sources.insert(sources.end(), pack.lib_files().begin(), pack.lib_files().end());
  for (const PackFile* f : sources) {
    if (files.count(f->path) == 0) continue;
    const std::vector<Token> t = Tokenize(f->contents);
    for (size_t i = 0; i + 2 < t.size(); ++i) {
      if (t[i].kind != Token::kName || t[i].text != "key" || t[i + 1].text != "=" ||
          t[i + 2].text == "=") {
        continue;
      }
      // The enclosing constructor: back to its '{', forward to its '}'.
      size_t open = i;
      for (int depth = 0; open > 0; --open) {
        const std::string& p = t[open - 1].text;
        if (t[open - 1].kind != Token::kPunct) continue;
        if (p == "}" || p == ")" || p == "]") ++depth;
        if ((p == "{" || p == "(" || p == "[") && depth-- == 0) break;
      }
      if (open == 0 || t[open - 1].text != "{") continue;  // `key = x` outside a table
      std::string category;
      for (size_t j = open, depth = 0; j < t.size(); ++j) {
        const std::string& p = t[j].text;
        if (t[j].kind == Token::kPunct && (p == "{" || p == "(" || p == "[")) ++depth;
        if (t[j].kind == Token::kPunct && (p == "}" || p == ")" || p == "]")) {
          if (depth == 0) break;
          --depth;
        }
        if (depth == 0 && t[j].text == "category" && j + 2 < t.size() && t[j + 1].text == "=" &&
            t[j + 2].kind == Token::kString) {
          category = t[j + 2].text;
        }
      }
      // The value ends at the next ',' / ';' or the constructor's '}'.
      size_t end = i + 3;
      for (int depth = 0; end < t.size(); ++end) {
        const std::string& p = t[end].text;
        if (t[end].kind != Token::kPunct) continue;
        if (p == "{" || p == "(" || p == "[") ++depth;
        if ((p == "}" || p == ")" || p == "]") && depth-- == 0) break;
        if (depth == 0 && (p == "," || p == ";")) break;
      }
      std::optional<std::string> pattern = ArgPattern(t, {i + 2, end});
      if (!pattern) return false;
      out.push_back({category, Segments(*pattern)});
    }
  }
  return true;
}

void LintKeys(const RulePack& pack, std::vector<LintFinding>& out) {
  std::vector<Template> templates = ExtractTemplates(pack);
  // Keys an extractor builds from nothing lint can read: any read may be fed.
  if (!ExtractorTemplates(pack, templates)) return;
  std::vector<const PackFile*> files = pack.lua_files();
  files.insert(files.end(), pack.lib_files().begin(), pack.lib_files().end());
  std::set<std::string> reported;
  for (const PackFile* f : files) {
    const std::vector<Token> t = Tokenize(f->contents);
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].kind != Token::kName || t[i + 1].text != "(") continue;
      const std::string& fn = t[i].text;
      if (fn.rfind("ledger.", 0) != 0) continue;
      const std::string method = fn.substr(7);
      size_t end = i;
      const std::vector<Span> args = CallArgs(t, i + 1, end);
      auto literal = [&](size_t n) -> std::optional<std::string> {
        if (n >= args.size()) return std::nullopt;
        const Span a = args[n];
        if (a.second != a.first + 1 || t[a.first].kind != Token::kString) return std::nullopt;
        return t[a.first].text;
      };
      std::string category;
      std::vector<std::string> patterns;
      auto add = [&](std::optional<std::string> p) {
        if (p) patterns.push_back(std::move(*p));
      };
      bool prefix = false;
      if (method == "fact" || method == "identifier" || method == "constraint" ||
          method == "condition") {
        category = method;
        if (!args.empty()) add(ArgPattern(t, args[0]));
      } else if (method == "entry" || method == "verified" || method == "known" ||
                 method == "keys" || method == "single" || method == "each" || method == "find") {
        auto c = literal(0);
        if (!c || args.size() < 2) continue;
        category = *c;
        add(ArgPattern(t, args[1]));
        prefix = method == "keys" || method == "single";
      } else if (method == "fields") {  // (category, prefix, name...): prefix.name each
        auto c = literal(0);
        if (!c || args.size() < 3) continue;
        category = *c;
        // A prefix without literal text (a variable) is "{?}": the name is literal.
        const std::string base = ArgPattern(t, args[1]).value_or("{?}");
        for (size_t n = 2; n < args.size(); ++n) {
          if (auto name = literal(n)) add(base + "." + *name);
        }
      } else if (method == "record") {
        auto kind = literal(0);
        if (!kind) continue;
        category = args.size() > 2 ? literal(2).value_or("") : "fact";
        add(*kind + ".{?}");
        prefix = true;
      }
      for (const std::string& pattern : patterns) {
        if (Produced(templates, category, pattern, prefix)) continue;
        const std::string subject = category + ":" + pattern;
        if (!reported.insert(subject).second) continue;
        out.push_back({"key_never_extracted", subject,
                       f->path + ": ledger." + method + " reads " +
                           (category.empty() ? "" : category + " ") + "'" + pattern + "'" +
                           (prefix ? " (prefix)" : "") +
                           ", which no extract.json rule or Lua extractor writes"});
      }
    }
  }
}

}  // namespace

std::vector<LintFinding> LintPack(const RulePack& pack) {
  std::vector<LintFinding> out;
  const std::vector<std::string> read_only = ManifestList(pack, "read_only");
  const std::vector<std::string> writes = ManifestList(pack, "writes");
  for (const std::string& w : writes) {
    bool covered = false;
    for (const RuleInfo& r : pack.rules()) {
      covered = covered || AnyOverlap(w, r.tools);
    }
    if (!covered) {
      out.push_back(
          {"uncovered_write_tool", w,
           "write tool '" + w + "' (pack.json) has no rule: its calls are allowed unchecked"});
    }
  }
  for (const RuleInfo& r : pack.rules()) {
    for (const std::string& g : r.tools) {
      if (AnyOverlap(g, writes)) continue;
      if (AnyOverlap(g, read_only)) {
        out.push_back({"rule_on_read_only_tool", r.id,
                       r.file + ": rule " + r.id + " names '" + g +
                           "', which is read-only in pack.json: no rule runs for it"});
      } else if (!pack.allow_unknown_tools()) {
        out.push_back({"rule_matches_no_tool", r.id,
                       r.file + ": rule " + r.id + " names '" + g +
                           "', which matches no tool pack.json declares"});
      }
    }
  }
  if (!pack.allow_unknown_tools()) {
    auto undeclared = [&](const std::string& tool, const std::string& where) {
      if (AnyOverlap(tool, writes) || AnyOverlap(tool, read_only)) return;
      out.push_back({"extraction_for_undeclared_tool", tool,
                     where + " extracts from '" + tool +
                         "', which pack.json does not declare (its calls are denied)"});
    };
    if (const nlohmann::json* spec = pack.extract_spec()) {
      if (auto tools = spec->find("tools"); tools != spec->end() && tools->is_object()) {
        for (const auto& [tool, rules] : tools->items()) undeclared(tool, "extract.json");
      }
    }
    for (const ExtractorInfo& e : pack.extractors()) {
      for (const std::string& tool : e.tools) undeclared(tool, e.file + ": extractor " + e.id);
    }
  }
  LintKeys(pack, out);
  lint_internal::LintReusedFacts(pack, out);
  return out;
}

}  // namespace taskledger
