// TakeLuaRun: the checks on what one Lua extractor returned (see
// internal/lua_runs.h). Pure function; thread-safe.
#include "internal/lua_runs.h"

#include <utility>

#include "internal/input_check.h"
#include "taskledger/extract/extractor.h"

namespace taskledger::extract_internal {

bool TakeLuaRun(ExtractorRun& run, const ExtractionLimits& limits, std::vector<Update>& out,
                std::string_view& code, std::string& message) {
  if (!run.updates.has_value()) {
    code = extraction_error::kExtractorFailed;
    message = run.updates.error().ToString();
    return false;
  }
  for (const Update& u : run.updates.value()) {
    std::string detail;
    if (u.key.empty()) {
      message = "an update has an empty key";
    } else if (!IsValidUtf8(u.key)) {
      message = "an update key is not valid UTF-8";
    } else if (CheckParsed(u.value, limits.max_depth, limits.max_output_bytes, &detail) !=
               ParsedProblem::kNone) {
      message = "the value of '" + u.key + "': " + detail;
    }
    if (!message.empty()) {
      code = extraction_error::kInvalidUpdate;
      return false;
    }
  }
  for (Update& u : run.updates.value()) out.push_back(std::move(u));
  return true;
}

}  // namespace taskledger::extract_internal
