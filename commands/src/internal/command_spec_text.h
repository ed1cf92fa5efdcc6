// A command's spec text (the JSON record a Redis command hash holds under
// "spec") written straight from the Command, without building the JSON tree
// EncodeCommand returns and then dumping it: the write path sends one per
// reservation. One member list spells it two ways:
// - kFull: exactly the bytes of DumpLossless(EncodeCommand(c)) (members in
//   key order, compact, UTF-8 unescaped, nlohmann's escapes): what every
//   release before 0.2's compact spec stored, and still what EncodeCommand
//   shows (CLI, HTTP, Python);
// - kCompact: the same text without the members that hold a
//   default-constructed Command's value (at a reservation: every mutable
//   attribute, which the hash's own fields hold from then on), except
//   "state", which DecodeCommand requires. DecodeCommand keeps the default
//   for a member that is absent, so both spellings decode to the same
//   Command, in this release and in every earlier one: the reader is the
//   same for both (tests/commands/command_spec_text_test.cc).
// Pure.
#pragma once

#include <string>

#include "taskledger/commands/command.h"

namespace taskledger::internal {

enum class SpecSpelling { kFull, kCompact };

// Appends the spec text of `c` to `out` in `spelling` and returns true;
// false when DumpLossless(EncodeCommand(c)) would be false (a string that is
// not valid UTF-8, a non-finite number, a binary value): `out` is then
// unspecified and the caller writes the tree's text with replacements instead.
// With `decision_apart` the text has no "decision" member (the hash keeps the
// record in its own field, WriteDecisionApart) and its validity is not checked.
bool WriteCommandSpec(const Command& c, SpecSpelling spelling, std::string& out,
                      bool decision_apart = false);

// The bytes a command hash keeps in its "decision" field for a decision kept
// apart from the spec: a typed record's CBOR (AppendDecisionBytes, the bytes
// its turn keeps), appended to `out`, and true. False (`out` unchanged) for a
// decision given as JSON, a typed one with members this version does not know,
// or one holding a string that is not valid UTF-8: such a decision stays in the
// spec's text, as every release before kept it. O(size of the record).
bool WriteDecisionApart(const CommandDecision& d, std::string& out);

}  // namespace taskledger::internal
