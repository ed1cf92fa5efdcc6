// A strict reader of rendered state blocks, playing the part of a consumer
// (or a model) that trusts the block's structure: it reads every line, tag or
// member back and fails on anything the layout does not define. Tests use it
// to prove that hostile keys and values come back as exactly the entries that
// were rendered, and nothing else. Test-only; thread-compatible.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/render/state_block.h"

namespace taskledger::testing {

struct ReadEntry {
  std::string section;  // "facts", "identifiers", "constraints", "conditions"
  std::string key;
  nlohmann::json value;
  std::string provenance;  // as written (bracket, attributes or JSON), when requested
  bool operator==(const ReadEntry&) const = default;
};

struct ReadBlock {
  std::string error;  // empty when the block was read completely
  std::vector<std::string> sections;
  std::vector<ReadEntry> entries;
  std::map<std::string, size_t> omitted;  // section -> count
};

ReadBlock ReadStateBlock(StateBlockFormat format, std::string_view text, bool provenance);

// Text that could break a line or hide characters: C0 controls other than
// '\n', DEL, U+0085, U+2028, U+2029, bidi controls, invalid UTF-8. Empty
// when none; otherwise a description of the first one.
std::string FindLineBreakers(std::string_view text);

}  // namespace taskledger::testing
