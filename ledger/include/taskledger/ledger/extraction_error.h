// ExtractionError: the typed record of one extraction error (a tool output or
// user message that could not be turned into ledger updates, or a command the
// session could not settle), as a turn keeps it in its "errors" list.
//
// The stored form is a JSON object {source, tool, call_id, rule, code,
// message, ...}; EncodeExtractionError and DecodeExtractionError are its one
// encoder and decoder. Every member is optional in the stored form (a member
// absent stays absent), and whatever this version does not know is kept in
// `extra` and written back unchanged: members another writer added (the
// session's "command_key"), a known member whose value is not a string, or a
// whole record that is not an object. So decode then encode gives back the
// record as read, for 0.1 data too. Plain value type; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger {

struct ExtractionError {
  std::optional<std::string> source;   // "tool", "user", "commands"
  std::optional<std::string> tool;     // for a tool output: the tool's name
  std::optional<std::string> call_id;  // for a tool output: the call's id
  std::optional<std::string> rule;     // the rule or extractor that failed, when one did
  std::optional<std::string> code;     // extraction_error::k... (extract/extractor.h)
  std::optional<std::string> message;  // for people
  // Members this version does not know, as read (an object; empty when none),
  // or the whole stored value when it was not an object.
  nlohmann::json extra = nlohmann::json::object();
  bool operator==(const ExtractionError&) const = default;
};

// The stored JSON object: the present members and the members of `extra`
// (or `extra` itself when it is not an object).
nlohmann::json EncodeExtractionError(const ExtractionError& error);
// A list of them (a turn's "errors"), as a JSON array of the records above.
nlohmann::json EncodeExtractionErrors(const std::vector<ExtractionError>& errors);
// Reads any JSON value; never fails, since every stored value has a typed form.
ExtractionError DecodeExtractionError(const nlohmann::json& j);

}  // namespace taskledger
