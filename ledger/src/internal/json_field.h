// The one type test both ledger codecs (codec.cc for entries, turns and
// states; decision_codec.cc for decision records) use when they decode a
// stored member: whether a JSON value has the shape a C++ field of type T is
// written as. Keeping it in one place keeps the two decoders agreeing on what
// "the wrong type" means (an unsigned field accepts a non-negative integer
// however nlohmann parsed it; strings include SharedString).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "taskledger/base/shared_string.h"

namespace taskledger::internal {

template <class T>
bool JsonHolds(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, SharedString>) {
    return v.is_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean();
  } else if constexpr (std::is_unsigned_v<T>) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  } else {
    return v.is_number_integer();
  }
}

}  // namespace taskledger::internal
