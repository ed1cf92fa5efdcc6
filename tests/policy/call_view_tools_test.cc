// CallView keeps the data table behind `call.args` per tool (the last four
// tools; policy/src/internal/call_view.h): a check sees exactly its own
// call's arguments whichever tools were checked before, when a tool comes
// back after others, after its table was reused for a fifth tool, and
// around arguments that are not an object. Through a real checker.
#include <string>

#include <catch2/catch.hpp>

#include "policy_test_util.h"

namespace taskledger {
namespace {

using testing::kNow;
using testing::MakeChecker;
using testing::MakePack;

TEST_CASE("each tool's arguments are seen alone, however tools interleave", "[policy]") {
  auto checker = MakeChecker(
      MakePack("rule { id = 'probe', tools = {'write_*'}, check = function(call, ledger)\n"
               "  local seen = {}\n"
               "  for k, v in pairs(call.args) do seen[#seen + 1] = k .. '=' .. tostring(v) end\n"
               "  table.sort(seen)\n"
               "  return deny(call.tool .. ' ' .. table.concat(seen, ',') .. ' ' ..\n"
               "              tostring(call.args.a) .. ' ' .. tostring(#call.args))\nend }\n"));
  auto reason = [&](const std::string& tool, const nlohmann::json& args) {
    return checker->Check({"c", tool, args}, LedgerState{}, {}, kNow).reason;
  };
  CHECK(reason("write_0", {{"a", 1}, {"b", 2}}) == "write_0 a=1,b=2 1 0");
  CHECK(reason("write_1", {{"a", 3}}) == "write_1 a=3 3 0");
  CHECK(reason("write_0", {{"b", 2}}) == "write_0 b=2 nil 0");  // a is gone
  CHECK(reason("write_1", {{"a", 3}}) == "write_1 a=3 3 0");    // as kept
  CHECK(reason("write_1", {{"c", "x"}}) == "write_1 c=x nil 0");
  CHECK(reason("write_0", {{"b", 2}}) == "write_0 b=2 nil 0");
  // Five more tools: write_0's and write_1's tables are reused for others.
  for (int i = 2; i < 7; ++i) {
    const std::string tool = "write_" + std::to_string(i);
    CHECK(reason(tool, {{"t" + std::to_string(i), i}}) ==
          tool + " t" + std::to_string(i) + "=" + std::to_string(i) + " nil 0");
  }
  CHECK(reason("write_0", {{"a", 5}}) == "write_0 a=5 5 0");
  CHECK(reason("write_1", {{"c", "x"}}) == "write_1 c=x nil 0");
  CHECK(reason("write_6", {{"t6", 6}}) == "write_6 t6=6 nil 0");
  // Arguments that are not an object in between, then each tool's again.
  CHECK(reason("write_0", nlohmann::json::array({7, 8})) == "write_0 1=7,2=8 nil 2");
  CHECK(reason("write_0", {{"a", 5}}) == "write_0 a=5 5 0");
  CHECK(reason("write_1", "text") == "write_1  nil 0");
  CHECK(reason("write_1", {{"c", "x"}}) == "write_1 c=x nil 0");
  CHECK(reason("write_0", {{"a", 5}}) == "write_0 a=5 5 0");
  // Nested values are proxies of the call's own values.
  CHECK(reason("write_0", {{"a", {{"x", 1}}}}).starts_with("write_0 a=table"));
  CHECK(reason("write_1", {{"c", "y"}}) == "write_1 c=y nil 0");
  CHECK(reason("write_0", {{"b", 9}}) == "write_0 b=9 nil 0");
}

}  // namespace
}  // namespace taskledger
