// Digests shared by every component: SHA-256, the canonical JSON text that
// makes equal arguments hash equally, and the args hash of a call. Used for
// pack versions, decision-log args hashes, command keys and journal request
// hashes. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger {

// Lower-case hex SHA-256 of `data` (64 characters).
std::string Sha256Hex(std::string_view data);

// The canonical form of a JSON value: integral floats become integers, so 1.0
// and 1 name the same argument (objects are already key-sorted).
nlohmann::json CanonicalValue(const nlohmann::json& value);

// Canonical JSON text: object members sorted by key, no whitespace, integral
// floats written as integers ("2.0" -> "2") so that the same value decoded by
// different parsers hashes the same. InvalidArgument for invalid UTF-8.
Result<std::string> CanonicalJson(const nlohmann::json& value);

// Sha256Hex of the canonical JSON of `args`; invalid UTF-8 is replaced by
// U+FFFD first, so this never fails.
std::string ArgsHash(const nlohmann::json& args);

}  // namespace taskledger
