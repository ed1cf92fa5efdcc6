// ToolBinding: how the command ledger calls one tool and, after an ambiguous
// outcome, asks the external system whether the call took effect.
//
// `call` performs the side effect, passing command.idempotency_key to the
// external system so a repeated call is deduplicated there. It classifies
// what happened: succeeded (with the external id and the response as
// evidence), failed (the system definitively refused), or ambiguous (timeout,
// dropped connection: it may or may not have taken effect). `lookup` searches
// by idempotency key or natural key (command.target): found (with evidence),
// not found, or unknown (the lookup itself failed).
// Callbacks run on the caller's thread; an exception thrown by `call` counts
// as ambiguous and one thrown by `lookup` as unknown. Plain value types.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "taskledger/commands/command.h"

namespace taskledger {

struct ToolOutcome {
  enum class Kind { kSucceeded, kFailed, kAmbiguous };
  Kind kind = Kind::kAmbiguous;
  std::string external_id;  // kSucceeded
  nlohmann::json evidence;  // kSucceeded: the response that proves it
  std::string error;        // kFailed, kAmbiguous

  static ToolOutcome Succeeded(std::string external_id, nlohmann::json evidence) {
    return {Kind::kSucceeded, std::move(external_id), std::move(evidence), {}};
  }
  static ToolOutcome Failed(std::string error) { return {Kind::kFailed, {}, {}, std::move(error)}; }
  static ToolOutcome Ambiguous(std::string error) {
    return {Kind::kAmbiguous, {}, {}, std::move(error)};
  }
};

struct LookupResult {
  enum class Kind { kFound, kNotFound, kUnknown };
  Kind kind = Kind::kUnknown;
  std::string external_id;  // kFound
  nlohmann::json evidence;  // kFound
  std::string error;        // kUnknown

  static LookupResult Found(std::string external_id, nlohmann::json evidence) {
    return {Kind::kFound, std::move(external_id), std::move(evidence), {}};
  }
  static LookupResult NotFound() { return {Kind::kNotFound, {}, {}, {}}; }
  static LookupResult Unknown(std::string error) {
    return {Kind::kUnknown, {}, {}, std::move(error)};
  }
};

struct ToolBinding {
  std::function<ToolOutcome(const Command&)> call;
  std::function<LookupResult(const Command&)> lookup;
};

}  // namespace taskledger
