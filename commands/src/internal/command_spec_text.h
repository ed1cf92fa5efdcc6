// A command's spec text (the JSON record a Redis command hash holds under
// "spec") written straight from the Command, without building the JSON tree
// EncodeCommand returns and then dumping it: the write path sends one per
// reservation. The bytes are exactly those of DumpLossless(EncodeCommand(c))
// (members in key order, compact, UTF-8 unescaped, nlohmann's escapes), so
// stored hashes stay as every earlier release wrote them
// (tests/commands/command_spec_text_test.cc compares the two). Pure.
#pragma once

#include <string>

#include "taskledger/commands/command.h"

namespace taskledger::internal {

// Appends the spec text of `c` to `out` and returns true; false when
// DumpLossless(EncodeCommand(c)) would be false (a string that is not valid
// UTF-8, a non-finite number, a binary value): `out` is then unspecified and
// the caller writes the tree's text with replacements instead.
bool WriteCommandSpec(const Command& c, std::string& out);

}  // namespace taskledger::internal
