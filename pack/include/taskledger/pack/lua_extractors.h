// LuaExtractors: the seam through which extraction runs a pack's Lua
// extractor{} declarations. The extractors live in the lua_State of a
// PolicyChecker (one per thread), but extraction sits below policy in the
// component graph, so it sees only this interface; PolicyChecker implements
// it and the session hands its checker to its Extractor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/base/tool_call.h"
#include "taskledger/ledger/entry.h"

namespace taskledger {

// The result of one Lua extractor: its updates, or why it failed. One
// extractor failing never loses another's updates. Error codes:
// PolicyError (the extractor raised an error), LimitExceeded (budget,
// deadline or memory), InvalidArgument (it returned something that is not a
// valid array of updates: bad shape, unknown field, empty key, a value that
// is not JSON-representable), Internal.
struct ExtractorRun {
  std::string extractor_id;
  Result<std::vector<Update>> updates = std::vector<Update>{};
};

class LuaExtractors {
 public:
  virtual ~LuaExtractors() = default;
  // True if some extractor{} of the pack applies to `tool`.
  virtual bool HasExtractors(std::string_view tool) const = 0;
  // Runs every extractor applying to call.tool over `output`; see
  // PolicyChecker::RunExtractors for the contract.
  virtual std::vector<ExtractorRun> RunExtractors(const ProposedCall& call,
                                                  const nlohmann::json& output, int64_t now_ms) = 0;
  // True if some extractor{} of the pack declares `user = true`.
  virtual bool HasUserExtractors() const = 0;
  // Runs every `user = true` extractor over one user message; see
  // PolicyChecker::RunUserExtractors for the contract.
  virtual std::vector<ExtractorRun> RunUserExtractors(std::string_view text, int64_t now_ms) = 0;
};

}  // namespace taskledger
