// The parts of `pack lint` (see taskledger/pack/lint.h) shared between its
// files: a tokenizer for the best-effort scans of a pack's Lua source
// (lint_tokens.cc), and the check on facts functions (lint_facts.cc). Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "taskledger/pack/lint.h"
#include "taskledger/pack/rule_pack.h"

namespace taskledger::lint_internal {

// One token of Lua source. Comments and whitespace are dropped; a name keeps
// the dotted names after it ("ledger.fact", "f.users"); a string token holds
// the literal's text; numbers are kOther "0"; ".." is kConcat; every other
// character is a kPunct of its own ("==" is two "=" tokens).
struct Token {
  enum Kind { kName, kString, kConcat, kPunct, kOther } kind;
  std::string text;
};
std::vector<Token> Tokenize(std::string_view source);

// facts_table_not_refilled: a facts function (rule{ facts = fn }) that
// returns a table it keeps between checks (a file-level `local T = {}`) and
// sets one of its fields only on some paths, or returns it before setting
// them: a check where the field is not set sees an earlier check's value.
void LintReusedFacts(const RulePack& pack, std::vector<LintFinding>& out);

}  // namespace taskledger::lint_internal
