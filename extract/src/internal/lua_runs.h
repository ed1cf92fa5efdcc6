// What a Lua extractor returned, held to the standard of a tool output before
// it joins an extraction: Lua strings are arbitrary bytes and Lua tables
// arbitrary shapes. Shared by tool outputs (extractor.cc) and user messages
// (user_message.cc). Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "taskledger/extract/extraction_rules.h"
#include "taskledger/ledger/entry.h"
#include "taskledger/pack/lua_extractors.h"

namespace taskledger::extract_internal {

// Moves the updates of `run` onto `out` and returns true, or returns false
// with the error code (extractor_failed, invalid_update) and message set,
// leaving `out` unchanged: one bad update loses the whole run's updates.
bool TakeLuaRun(ExtractorRun& run, const ExtractionLimits& limits, std::vector<Update>& out,
                std::string_view& code, std::string& message);

}  // namespace taskledger::extract_internal
