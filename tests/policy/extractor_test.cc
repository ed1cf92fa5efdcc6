// Lua extractors: updates with provenance, per-extractor errors, budgets.
#include <catch2/catch.hpp>

#include "policy_test_util.h"

using namespace taskledger;
using namespace taskledger::testing;

TEST_CASE("extractors turn tool outputs into updates; one failing keeps the others", "[policy]") {
  auto pack = MakePack(R"lua(
    extractor { id = "x.methods", tools = {"get_user"}, extract = function(output, call)
      local out = {}
      for id, pm in pairs(output.payment_methods) do
        out[#out + 1] = { category = "fact", key = "user.payment." .. id .. ".source", value = pm.source }
      end
      table.sort(out, function(a, b) return a.key < b.key end)
      out[#out + 1] = { category = "identifier", key = "user_id", value = call.args.user_id,
                        expire_turns = 3 }
      out[#out + 1] = { category = "constraint", key = "hold", value = output.payment_methods,
                        expire_seconds = 60 }
      return out
    end }
    extractor { id = "x.broken", tools = {"get_*"}, extract = function(output, call)
      return { { category = "fact", key = "k", value = output.missing.field } }
    end }
    extractor { id = "x.loop", tools = {"get_user"}, extract = function() while true do end end }
    extractor { id = "x.bad_shape", tools = {"get_user"}, extract = function()
      return { { category = "facts", key = "k", valu = 1 } }
    end }
    extractor { id = "x.other_tool", tools = {"get_order"}, extract = function() return {} end }
  )lua");
  auto checker = MakeChecker(pack);
  CHECK(checker->HasExtractors("get_user"));
  CHECK(pack->HasExtractors("get_order"));
  CHECK_FALSE(checker->HasExtractors("write_x"));
  ProposedCall call{"c9", "get_user", {{"user_id", "ann_1"}}};
  nlohmann::json output = {
      {"payment_methods", {{"pm_2", {{"source", "card"}}}, {"pm_1", {{"source", "gift"}}}}}};
  std::vector<ExtractorRun> runs = checker->RunExtractors(call, output, kNow);
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].extractor_id == "x.methods");
  REQUIRE(runs[0].updates.has_value());
  const std::vector<Update>& u = runs[0].updates.value();
  REQUIRE(u.size() == 4);
  CHECK(u[0].key == "user.payment.pm_1.source");
  CHECK(u[0].value == "gift");
  CHECK(u[0].category == Category::kFact);
  CHECK(u[0].provenance.source == SourceKind::kToolOutput);
  CHECK(u[0].provenance.source_id == "get_user#c9");
  CHECK(u[0].provenance.verified);
  CHECK(u[0].provenance.rule_id == "x.methods");
  CHECK(u[0].provenance.pack_version == pack->version());
  CHECK(u[2].category == Category::kIdentifier);
  CHECK(u[2].value == "ann_1");
  CHECK(u[2].expire_after_turns == 3u);
  CHECK(u[3].value == output["payment_methods"]);  // a read-only proxy converts back to JSON
  CHECK(u[3].expire_at_ms == kNow + 60'000);

  REQUIRE_FALSE(runs[1].updates.has_value());
  CHECK(runs[1].updates.error().code() == StatusCode::kPolicyError);
  CHECK_THAT(runs[1].updates.error().message(), Catch::Contains("x.broken"));
  REQUIRE_FALSE(runs[2].updates.has_value());
  CHECK(runs[2].updates.error().code() == StatusCode::kLimitExceeded);
  REQUIRE_FALSE(runs[3].updates.has_value());
  CHECK(runs[3].updates.error().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(runs[3].updates.error().message(), Catch::Contains("unknown update field 'valu'"));

  // The checker is healthy after the failures.
  std::vector<ExtractorRun> again = checker->RunExtractors(call, output, kNow);
  REQUIRE(again[0].updates.has_value());
  CHECK(again[0].updates.value().size() == 4);
  // Text outputs arrive as strings.
  auto text = MakeChecker(MakePack(R"lua(
    extractor { id = "x.text", tools = {"get_id"}, extract = function(output)
      return { { category = "identifier", key = "id", value = output:match("^id: (%w+)$") } }
    end }
  )lua"));
  auto tr = text->RunExtractors({"c1", "get_id", nlohmann::json::object()}, "id: abc", kNow);
  REQUIRE(tr.size() == 1);
  REQUIRE(tr[0].updates.has_value());
  CHECK(tr[0].updates.value()[0].value == "abc");
}
