// `pack lint`'s facts_table_not_refilled check (see internal/lint_parts.h). A
// facts function may refill one table it keeps between checks instead of
// building a new one (docs/rule-api.md, "Facts computed once per check"), but
// then it must set every field on every call: a field it sets only on some
// paths keeps an earlier check's value on the others, and rules would judge
// this call on another call's facts. Best effort, on the tokens of each Lua
// file: a function named in `facts = NAME` (or written there) that returns a
// table declared at file level as `local T = {}` (directly or through a
// `local A = T` alias); a field counts as set on every call when some
// assignment `T.field = ...` (multiple assignment included) is in the
// function's own block, not inside an if, a loop or a nested function, and
// comes before any `return T` inside such a block. Pure; thread-safe.
#include <map>
#include <set>
#include <string>
#include <utility>

#include "internal/lint_parts.h"

namespace taskledger::lint_internal {
namespace {

bool IsName(const Token& t, std::string_view s) { return t.kind == Token::kName && t.text == s; }
bool IsPunct(const Token& t, char c) { return t.kind == Token::kPunct && t.text[0] == c; }

// +1 for a word that opens a block closed by "end"/"until", -1 for those, else 0.
int BlockStep(const Token& t) {
  if (t.kind != Token::kName) return 0;
  const std::string& w = t.text;
  if (w == "function" || w == "if" || w == "do" || w == "repeat") return 1;
  if (w == "end" || w == "until") return -1;
  return 0;
}

// True if the name at t[i] is a target of an assignment statement: it is
// followed by `, name`* and then a single "=" (not "==").
bool AssignmentTarget(const std::vector<Token>& t, size_t i) {
  size_t j = i + 1;
  while (j + 1 < t.size() && IsPunct(t[j], ',') && t[j + 1].kind == Token::kName) j += 2;
  return j + 1 < t.size() && IsPunct(t[j], '=') && !IsPunct(t[j + 1], '=');
}

// The tokens of a facts function: its "function" token, and its name for
// messages.
struct FactsFunction {
  size_t at = 0;
  std::string name;
};

std::vector<FactsFunction> FactsFunctions(const std::vector<Token>& t) {
  std::set<std::string> named;
  std::vector<FactsFunction> out;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (!IsName(t[i], "facts") || !IsPunct(t[i + 1], '=') || t[i + 2].kind != Token::kName) {
      continue;
    }
    if (t[i + 2].text == "function") {
      out.push_back({i + 2, "facts function"});
    } else {
      named.insert(t[i + 2].text);
    }
  }
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    // function NAME (   |   NAME = function (
    if (IsName(t[i], "function") && t[i + 1].kind == Token::kName && IsPunct(t[i + 2], '(') &&
        named.count(t[i + 1].text) > 0) {
      out.push_back({i, "facts function " + t[i + 1].text});
    } else if (t[i].kind == Token::kName && named.count(t[i].text) > 0 && IsPunct(t[i + 1], '=') &&
               IsName(t[i + 2], "function")) {
      out.push_back({i + 2, "facts function " + t[i].text});
    }
  }
  return out;
}

// The tables declared at file level as `local T = {}`.
std::set<std::string> KeptTables(const std::vector<Token>& t) {
  std::set<std::string> out;
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (depth == 0 && i + 4 < t.size() && IsName(t[i], "local") && t[i + 1].kind == Token::kName &&
        t[i + 1].text.find('.') == std::string::npos && IsPunct(t[i + 2], '=') &&
        IsPunct(t[i + 3], '{') && IsPunct(t[i + 4], '}')) {
      out.insert(t[i + 1].text);
    }
    depth += BlockStep(t[i]);
    if (depth < 0) depth = 0;
  }
  return out;
}

// Checks the facts function whose "function" token is t[at].
void CheckFunction(const std::string& file, const std::vector<Token>& t, const FactsFunction& fn,
                   const std::set<std::string>& kept, std::vector<LintFinding>& out) {
  std::map<std::string, std::string> refs;  // name in the function -> kept table
  for (const std::string& k : kept) refs[k] = k;
  std::map<std::string, std::set<std::string>> fields;         // table -> fields it sets
  std::map<std::string, std::map<std::string, size_t>> every;  // table -> field -> first
  std::map<std::string, size_t> returned;  // table -> first return (SIZE_MAX: top-level only)
  int depth = 0;
  for (size_t i = fn.at; i < t.size(); ++i) {
    const Token& tok = t[i];
    depth += BlockStep(tok);
    if (depth <= 0) break;  // the function's "end"
    if (tok.kind != Token::kName) continue;
    // local A = T: A names the kept table too.
    if (tok.text == "local" && i + 3 < t.size() && t[i + 1].kind == Token::kName &&
        IsPunct(t[i + 2], '=') && t[i + 3].kind == Token::kName && refs.count(t[i + 3].text) &&
        !(i + 4 < t.size() && (IsPunct(t[i + 4], ',') || t[i + 4].kind == Token::kConcat))) {
      refs[t[i + 1].text] = refs[t[i + 3].text];
      continue;
    }
    if (tok.text == "return" && i + 1 < t.size() && t[i + 1].kind == Token::kName &&
        refs.count(t[i + 1].text)) {
      const std::string& table = refs[t[i + 1].text];
      size_t& first = returned.try_emplace(table, SIZE_MAX).first->second;
      if (depth > 1 && first == SIZE_MAX) first = i;  // a return on some path only
      continue;
    }
    const size_t dot = tok.text.find('.');
    if (dot == std::string::npos || tok.text.find('.', dot + 1) != std::string::npos) continue;
    auto ref = refs.find(tok.text.substr(0, dot));
    if (ref == refs.end() || !AssignmentTarget(t, i)) continue;
    const std::string field = tok.text.substr(dot + 1);
    fields[ref->second].insert(field);
    if (depth == 1) every[ref->second].try_emplace(field, i);
  }
  for (const auto& [table, early] : returned) {
    for (const std::string& field : fields[table]) {
      auto set = every[table].find(field);
      std::string why;
      if (set == every[table].end()) {
        why = "sets " + table + "." + field + " only on some paths (inside an if, a loop or a " +
              "nested function)";
      } else if (set->second > early) {
        why = "returns " + table + " on some path before setting " + table + "." + field;
      } else {
        continue;
      }
      out.push_back({"facts_table_not_refilled", table + "." + field,
                     file + ": " + fn.name + " keeps table " + table + " between checks and " +
                         why + ": a check that does not set it sees an earlier check's value; " +
                         "set every field on every call (nil included) or return a new table"});
    }
  }
}

}  // namespace

void LintReusedFacts(const RulePack& pack, std::vector<LintFinding>& out) {
  std::vector<const PackFile*> files = pack.lua_files();
  files.insert(files.end(), pack.lib_files().begin(), pack.lib_files().end());
  for (const PackFile* f : files) {
    const std::vector<Token> t = Tokenize(f->contents);
    const std::set<std::string> kept = KeptTables(t);
    if (kept.empty()) continue;
    for (const FactsFunction& fn : FactsFunctions(t)) CheckFunction(f->path, t, fn, kept, out);
  }
}

}  // namespace taskledger::lint_internal
