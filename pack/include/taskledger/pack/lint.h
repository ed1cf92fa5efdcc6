// Static checks on a loaded rule pack (`taskledger pack lint`): the gaps a
// careful reviewer looks for before a pack gates real tool calls.
//
// Checks (each finding names one; docs/rule-api.md, "pack lint"):
//   uncovered_write_tool   a pack.json "writes" entry that no rule's tools
//                          name or glob overlaps: its calls run no rule
//   rule_matches_no_tool   a rule tools entry that overlaps no declared tool
//                          (skipped under "unknown_tools": "allow")
//   rule_on_read_only_tool a rule tools entry that overlaps only read-only
//                          tools: rules never run for those
//   extraction_for_undeclared_tool
//                          an extract.json tools entry or a Lua extractor
//                          for a tool the pack does not declare (skipped
//                          under "unknown_tools": "allow")
//   key_never_extracted    a ledger read in the Lua source whose key, built
//                          from string literals, matches no extract.json key
//                          template of its category
//   facts_table_not_refilled
//                          a facts function (rule{ facts = fn }) that keeps
//                          one table between checks (a file-level
//                          `local T = {}` it returns) and sets a field of it
//                          only on some paths, or returns it on some path
//                          before setting the field: that field can hold an
//                          earlier check's value (subject: "T.field")
// Two globs "overlap" when either matches the other's text. The key check is
// best effort: it sees ledger.fact/identifier/constraint/condition, entry,
// verified, keys, each, find and record calls whose key argument holds a
// string literal (pieces joined with `..` and std.key(...) arguments that are
// not literals read as "any segment"); a key held in a variable, built by a
// helper other than std.key, or read through std.* helpers is not seen, and
// a pack with Lua extractors (whose keys are only known when they run) gets no
// key findings. The facts check is best effort too: it follows a function
// named in `facts = NAME` (or written there) in the same file, a table
// declared at that file's top level, `local A = T` aliases and `T.field =`
// assignments (multiple assignment included); fields set through T[k],
// rawset or helpers are not seen.
#pragma once

#include <string>
#include <vector>

#include "taskledger/pack/rule_pack.h"

namespace taskledger {

struct LintFinding {
  std::string check;    // one of the names above
  std::string subject;  // the tool, rule id or key the finding is about
  std::string message;  // one line for the pack's author, with the file where known
};

// Findings in check order, then in the order of the pack's files. Empty when
// the pack is clean. Never fails: a loaded pack is always lintable.
std::vector<LintFinding> LintPack(const RulePack& pack);

}  // namespace taskledger
