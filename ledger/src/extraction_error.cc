// The one encoder and decoder of the stored extraction-error record (see
// taskledger/ledger/extraction_error.h). Pure functions; thread-safe.
#include "taskledger/ledger/extraction_error.h"

#include <array>
#include <utility>

namespace taskledger {
namespace {

using nlohmann::json;
using Member = std::optional<std::string> ExtractionError::*;

// The known members, by stored name.
constexpr std::array<std::pair<const char*, Member>, 6> kMembers = {{
    {"source", &ExtractionError::source},
    {"tool", &ExtractionError::tool},
    {"call_id", &ExtractionError::call_id},
    {"rule", &ExtractionError::rule},
    {"code", &ExtractionError::code},
    {"message", &ExtractionError::message},
}};

}  // namespace

json EncodeExtractionError(const ExtractionError& error) {
  if (!error.extra.is_object()) return error.extra;
  json j = error.extra;
  for (const auto& [name, member] : kMembers) {
    if (const auto& value = error.*member) j[name] = *value;
  }
  return j;
}

json EncodeExtractionErrors(const std::vector<ExtractionError>& errors) {
  json out = json::array();
  for (const ExtractionError& e : errors) out.push_back(EncodeExtractionError(e));
  return out;
}

ExtractionError DecodeExtractionError(const json& j) {
  ExtractionError error;
  if (!j.is_object()) {
    error.extra = j;
    return error;
  }
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    if (value.is_string()) {
      for (const auto& [name, member] : kMembers) {
        if (key == name) {
          error.*member = value.get<std::string>();
          known = true;
          break;
        }
      }
    }
    if (!known) error.extra[key] = value;
  }
  return error;
}

}  // namespace taskledger
