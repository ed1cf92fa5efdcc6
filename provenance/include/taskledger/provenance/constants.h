// Pack constants: values the pack itself names and vouches for (the
// organisation's own account, its support address, its home page), declared
// in pack.json and fed to every conversation's provenance index as sources of
// kind `constant` (trusted), so `call.trusted(arg)` holds for them without a
// user message or a tool output. pack.json:
//
//   "constants": {"own_account": "DE89 3704 0044 0532 0130 00",
//                 "support": ["help@example.org", "www.example.org/help"]}
//
// Names are non-empty; values are non-empty strings of at most
// kMaxConstantBytes, at most kMaxConstants in all. Matching is by the index's
// normalised form, as for every other source.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/provenance/index.h"

namespace taskledger::provenance {

inline constexpr std::size_t kMaxConstants = 10'000;
inline constexpr std::size_t kMaxConstantBytes = 4096;

struct Constant {
  std::string name;
  std::string value;
};

// The `constants` object above, by name (a list's values in order); null
// gives none. Anything else is InvalidArgument naming the key.
Result<std::vector<Constant>> ParseConstants(const nlohmann::json& constants);

// ParseConstants, then ProvenanceIndex::AddConstant for each: the index's
// first error (a parse error or a limit) is returned and the rest are not added.
Status AddConstants(ProvenanceIndex& index, const nlohmann::json& constants);

}  // namespace taskledger::provenance
