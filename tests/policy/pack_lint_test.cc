// `pack lint`'s facts_table_not_refilled check (taskledger/pack/lint.h) on
// packs a pack author could write: a facts function that keeps one table
// between checks must set every field on every call, or a rule judges a call
// on an earlier call's facts.
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "policy_test_util.h"
#include "taskledger/pack/lint.h"

namespace taskledger {
namespace {

using testing::MakePack;

// The subjects of the facts_table_not_refilled findings on `lua`.
std::set<std::string> Stale(const std::string& lua) {
  std::set<std::string> out;
  for (const LintFinding& f : LintPack(*MakePack(lua))) {
    if (f.check == "facts_table_not_refilled") out.insert(f.subject);
  }
  return out;
}

const std::string kRule =
    "rule { id = 'r', tools = {'write_*'}, facts = facts_of, why = function(call, ledger, f)\n"
    "  return nil end }\n";

TEST_CASE("pack lint: a kept facts table refilled on every call is clean", "[policy][lint]") {
  // Every field in the function's own block (one multiple assignment, through
  // an alias), as rules/retail's call_facts does.
  CHECK(Stale("local F = {}\n"
              "local function facts_of(call, ledger)\n"
              "  local status\n"
              "  if call.args.order_id then status = 'pending' end\n"
              "  local f = F\n"
              "  f.order, f.status = call.args.order_id, status\n"
              "  return f\n"
              "end\n" +
              kRule)
            .empty());
  // A new table per call keeps nothing, whatever it sets.
  CHECK(Stale("local function facts_of(call, ledger)\n"
              "  local t = {}\n"
              "  if call.args.order_id then t.status = 'pending' end\n"
              "  return t\n"
              "end\n" +
              kRule)
            .empty());
}

TEST_CASE("pack lint: a kept facts table with a field set on some paths is found",
          "[policy][lint]") {
  const std::string lua =
      "local F = {}\n"
      "local function facts_of(call, ledger)\n"
      "  F.order = call.args.order_id\n"
      "  if call.args.order_id then F.status = 'pending' end\n"
      "  for i = 1, 2 do F.count = i end\n"
      "  local function later() F.late = 1 end\n"
      "  later()\n"
      "  return F\n"
      "end\n" +
      kRule;
  CHECK(Stale(lua) == std::set<std::string>{"F.status", "F.count", "F.late"});
  std::string message;
  for (const LintFinding& f : LintPack(*MakePack(lua))) {
    if (f.subject == "F.status") message = f.message;
  }
  CHECK_THAT(message, Catch::Contains("facts function facts_of keeps table F between checks"));
  CHECK_THAT(message, Catch::Contains("set every field on every call"));
}

TEST_CASE("pack lint: a kept facts table returned before it is refilled is found",
          "[policy][lint]") {
  // An early return hands out the table with the fields of the last call.
  CHECK(Stale("local F = {}\n"
              "facts_of = function(call, ledger)\n"
              "  if call.args.order_id == nil then return F end\n"
              "  F.order, F.status = call.args.order_id, 'pending'\n"
              "  return F\n"
              "end\n" +
              kRule) == std::set<std::string>{"F.order", "F.status"});
  // Written inline in rule{}: the same check.
  CHECK(Stale("local T = {}\n"
              "rule { id = 'r', tools = {'write_*'}, facts = function(call, ledger)\n"
              "  if call.args.n then T.n = call.args.n end\n"
              "  return T end,\n"
              "  why = function() return nil end }\n") == std::set<std::string>{"T.n"});
}

}  // namespace
}  // namespace taskledger
