// Helpers shared by the extraction tests: compile an extract.json given
// inline, build a call, and find an update by key. Thread-compatible.
#pragma once

#include <memory>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "taskledger/base/tool_call.h"
#include "taskledger/extract/extraction_rules.h"
#include "taskledger/extract/extractor.h"

namespace taskledger::extract_test {

inline constexpr const char* kPackVersion = "pack-v1";

// Compiles `spec`; fails the test (with the loader's message) if it does not load.
inline std::shared_ptr<const ExtractionRules> Rules(const nlohmann::json& spec) {
  auto r = ExtractionRules::FromJson(spec, kPackVersion);
  INFO((r.has_value() ? std::string() : r.error().ToString()));
  REQUIRE(r.has_value());
  return r.value();
}

// The loader's error for `spec` (fails the test if it loads).
inline Status LoadError(const nlohmann::json& spec) {
  auto r = ExtractionRules::FromJson(spec, kPackVersion);
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

inline ProposedCall Call(std::string tool, std::string id = "c1",
                         nlohmann::json args = nlohmann::json::object()) {
  return ProposedCall{std::move(id), std::move(tool), std::move(args)};
}

// The update for (category, key), or nullptr.
inline const Update* Find(const Extraction& e, Category c, const std::string& key) {
  for (const Update& u : e.updates) {
    if (u.category == c && u.key == key) return &u;
  }
  return nullptr;
}

}  // namespace taskledger::extract_test
