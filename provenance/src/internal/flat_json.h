// A compact, private copy of a JSON value for the provenance index's queue:
// one string holding the value's tree in preorder (a tag byte per node,
// lengths and scalars in native byte order, strings verbatim), written in one
// pass that also measures what the index would need for it. Copying an
// output this way is one buffer instead of a node allocation per value;
// Unflatten gives back a value equal to the original (same types, same
// numbers, same key order), so walking it indexes exactly what the original
// would. Never stored or sent anywhere: the encoding is this build's own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace taskledger::provenance::detail {

struct FlatMeasure {
  std::size_t bytes = 0;   // an upper bound of the text bytes of the leaves
  std::size_t leaves = 0;  // strings, numbers and booleans
  bool fits = true;        // false: over `max_bytes`, deeper than `max_depth`, or unflattenable
};

// Appends `value` to `out`, stopping (fits = false, `out` unusable) as soon as
// the value could exceed `max_bytes` of text or nests `max_depth` deep.
FlatMeasure Flatten(const nlohmann::json& value, std::size_t max_bytes, int max_depth,
                    std::string& out);

// An upper bound of the sources the index's walk adds for the value Flatten
// wrote into `flat`, tighter than FlatMeasure's (one per leaf plus one per
// text byte): per string leaf one plus its TokenStartBound, per number or
// boolean a constant (its JSON text has at most three token starts). One pass
// over `flat`, no allocation.
std::size_t SourceBound(std::string_view flat);

// The value Flatten wrote into `flat` (which must be a whole, fitting Flatten).
nlohmann::json Unflatten(std::string_view flat);

}  // namespace taskledger::provenance::detail
