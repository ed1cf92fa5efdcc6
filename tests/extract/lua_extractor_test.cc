// Lua extractors run through the policy component's sandbox: their updates
// join the mappings', and one that fails (error, budget, bad update) loses
// only its own updates; the ledger receives the rest plus the error.
#include <memory>

#include "extract_test_util.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/policy/checker.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Find;
using nlohmann::json;

const char* kPackJson =
    R"({"name": "lua-extract", "tools": {"read_only": ["get_*"], "writes": []}})";

// max_depth 3: an extractor may not return a value nested deeper than the
// outputs the pack accepts.
const char* kExtractJson = R"({"tools": {"get_user_details": [
  {"id": "user.name", "path": "/name", "category": "fact", "key": "user.{@user_id}.name"}],
  "get_order_status": [
  {"id": "order.status", "path": "/status", "category": "fact", "key": "order.status"},
  {"id": "order.address", "path": "/address", "category": "fact", "key": "order.address"}]},
  "limits": {"max_depth": 3}})";

const char* kExtractors = R"(
extractor {
  id = "a.payment_sources",
  tools = {"get_user_details"},
  extract = function(output, call)
    local out = {}
    for id, pm in pairs(output.payment_methods or {}) do
      out[#out + 1] = {category = "fact", key = "user.payment." .. id .. ".source", value = pm.source}
    end
    return out
  end,
}
extractor {
  id = "b.fails",
  tools = {"get_user_details"},
  extract = function(output, call)
    if output.fail then error("cannot read this output") end
    return {{category = "fact", key = "b.ran", value = true}}
  end,
}
extractor {
  id = "c.spins",
  tools = {"get_user_details"},
  extract = function(output, call)
    if output.spin then while true do end end
    return {{category = "fact", key = "c.ran", value = true, expire_turns = 2}}
  end,
}
extractor {
  id = "d.bad_bytes",
  tools = {"get_user_details"},
  extract = function(output, call)
    if output.bad_bytes then return {{category = "fact", key = "d.ran", value = "\xff\xfe"}} end
    if output.deep then return {{category = "fact", key = "d.ran", value = {{{{1}}}}}} end
    return {{category = "fact", key = "d.ran", value = "ok"}}
  end,
}
extractor {
  id = "f.echo",
  tools = {"get_order_status"},
  extract = function(output, call)
    return {{category = "fact", key = "echo.status", value = output.status},
            {category = "fact", key = "echo.city", value = output.address.city}}
  end,
}
extractor {
  id = "e.text",
  tools = {"find_user_id_by_email"},
  extract = function(output, call)
    return {{category = "identifier", key = "user_id", value = output}}
  end,
}
)";

struct LuaFixture {
  std::shared_ptr<const RulePack> pack;
  std::unique_ptr<PolicyChecker> checker;
  std::unique_ptr<Extractor> extractor;

  LuaFixture() {
    auto p = RulePack::FromFiles({{"pack.json", kPackJson},
                                  {"extract.json", kExtractJson},
                                  {"extractors.lua", kExtractors}});
    INFO((p.has_value() ? std::string() : p.error().ToString()));
    REQUIRE(p.has_value());
    pack = p.value();
    CheckerLimits limits;
    limits.instruction_budget = 200'000;
    auto c = PolicyChecker::Create(pack, limits);
    INFO((c.has_value() ? std::string() : c.error().ToString()));
    REQUIRE(c.has_value());
    checker = std::move(c).value();
    auto rules = ExtractionRules::FromPack(*pack);
    REQUIRE(rules.has_value());
    extractor =
        std::make_unique<Extractor>(rules.value(), ExtractorOptions{.checker = checker.get()});
  }
};

const json kUserArgs = {{"user_id", "yusuf_rossi_9620"}};

TEST_CASE("Lua extractor updates follow the mappings' with their own provenance",
          "[extract][lua]") {
  LuaFixture f;
  Extraction e = f.extractor->ExtractToolOutput(
      Call("get_user_details", "c5", kUserArgs),
      R"({"name": "Yusuf", "payment_methods": {"paypal_1": {"source": "paypal"}}})");
  INFO(EncodeExtractionErrors(e.errors).dump());
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 5);
  CHECK(e.updates[0].key == "user.yusuf_rossi_9620.name");  // mappings first
  const Update* src = Find(e, Category::kFact, "user.payment.paypal_1.source");
  REQUIRE(src != nullptr);
  CHECK(src->value == "paypal");
  CHECK(src->provenance.source == SourceKind::kToolOutput);
  CHECK(src->provenance.source_id == "get_user_details#c5");
  CHECK(src->provenance.rule_id == "a.payment_sources");
  CHECK(src->provenance.pack_version == f.pack->version());
  CHECK(src->provenance.verified);
  CHECK(Find(e, Category::kFact, "c.ran")->expire_after_turns == 2u);
  // The mapping carries the same pack version.
  CHECK(e.updates[0].provenance.pack_version == f.pack->version());
}

TEST_CASE("an extractor that errors loses only its own updates", "[extract][lua]") {
  LuaFixture f;
  Extraction e = f.extractor->ExtractToolOutput(Call("get_user_details", "c5", kUserArgs),
                                                R"({"name": "Yusuf", "fail": true})");
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].rule == "b.fails");
  CHECK(e.errors[0].code == "extractor_failed");
  CHECK(e.errors[0].message.value_or("").find("cannot read this output") != std::string::npos);
  CHECK(Find(e, Category::kFact, "b.ran") == nullptr);
  CHECK(Find(e, Category::kFact, "user.yusuf_rossi_9620.name") != nullptr);
  CHECK(Find(e, Category::kFact, "c.ran") != nullptr);
  CHECK(Find(e, Category::kFact, "d.ran") != nullptr);
}

TEST_CASE("an extractor over its budget or returning bad bytes fails alone", "[extract][lua]") {
  LuaFixture f;
  Extraction e =
      f.extractor->ExtractToolOutput(Call("get_user_details", "c5", kUserArgs),
                                     R"({"name": "Yusuf", "spin": true, "bad_bytes": true})");
  REQUIRE(e.errors.size() == 2);
  CHECK(e.errors[0].rule == "c.spins");
  CHECK(e.errors[0].code == "extractor_failed");
  CHECK(e.errors[1].rule == "d.bad_bytes");
  CHECK(e.errors[1].code == "extractor_failed");
  CHECK(e.errors[1].message.value_or("").find("UTF-8") != std::string::npos);
  CHECK(Find(e, Category::kFact, "c.ran") == nullptr);
  CHECK(Find(e, Category::kFact, "d.ran") == nullptr);
  CHECK(Find(e, Category::kFact, "b.ran") != nullptr);

  Extraction deep = f.extractor->ExtractToolOutput(Call("get_user_details", "c5", kUserArgs),
                                                   R"({"name": "Yusuf", "deep": true})");
  REQUIRE(deep.errors.size() == 1);
  CHECK(deep.errors[0].rule == "d.bad_bytes");
  CHECK(deep.errors[0].code == "invalid_update");
  CHECK(Find(deep, Category::kFact, "d.ran") == nullptr);
  CHECK(Find(deep, Category::kFact, "c.ran") != nullptr);

  // The checker is healthy afterwards.
  Extraction next = f.extractor->ExtractToolOutput(Call("get_user_details", "c6", kUserArgs),
                                                   R"({"name": "Yusuf"})");
  CHECK(next.errors.empty());
  CHECK(Find(next, Category::kFact, "d.ran")->value == "ok");
}

TEST_CASE("a failing extractor leaves the ledger with the rest and the error", "[extract][lua]") {
  LuaFixture f;
  ManualClock clock;
  auto store = NewMemoryStore({}, clock);
  auto ledger = Ledger::Open(*store, {"default", "lua"}, clock);
  REQUIRE(ledger.has_value());
  Ledger& l = *ledger.value();
  Extraction e = f.extractor->ExtractToolOutput(Call("get_user_details", "c5", kUserArgs),
                                                R"({"name": "Yusuf", "fail": true})");
  REQUIRE(StageExtraction(l, e).ok());
  REQUIRE(l.Commit().has_value());
  CHECK(l.head().FindLive(Category::kFact, "user.yusuf_rossi_9620.name", clock.NowMs()) != nullptr);
  CHECK(l.head().FindLive(Category::kFact, "b.ran", clock.NowMs()) == nullptr);
  auto turns = store->ReadTurns(l.id(), 1, 1);
  REQUIRE(turns.has_value());
  REQUIRE(turns.value()[0].errors.size() == 1);
  CHECK(turns.value()[0].errors[0].rule == "b.fails");
}

TEST_CASE("Lua extractors see all of the output the mappings took values from", "[extract][lua]") {
  LuaFixture f;
  Extraction e = f.extractor->ExtractToolOutput(
      Call("get_order_status"), R"({"status": "open", "address": {"city": "Philadelphia"}})");
  INFO(EncodeExtractionErrors(e.errors).dump());
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 4);
  CHECK(e.updates[0].value == "open");
  CHECK(e.updates[1].value == json{{"city", "Philadelphia"}});
  CHECK(Find(e, Category::kFact, "echo.status")->value == "open");
  CHECK(Find(e, Category::kFact, "echo.city")->value == "Philadelphia");
}

TEST_CASE("a text output reaches Lua extractors as a string; bad input reaches none",
          "[extract][lua]") {
  LuaFixture f;
  Extraction e = f.extractor->ExtractToolOutput(Call("find_user_id_by_email"), "yusuf_rossi_9620");
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].value == "yusuf_rossi_9620");
  CHECK(e.updates[0].provenance.rule_id == "e.text");

  Extraction bad = f.extractor->ExtractToolOutput(Call("get_user_details", "c5", kUserArgs),
                                                  std::string(100'000, '['));
  CHECK(bad.updates.empty());
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].code == "too_deep");
}

// The pack's limits.max_depth is the one depth limit: an output the pack
// accepts (here 100 levels, over the default 64) reaches its Lua extractors
// whole, and the limit still holds one level further.
TEST_CASE("a pack's max_depth reaches its Lua extractors", "[extract][lua]") {
  auto p = RulePack::FromFiles({{"pack.json", kPackJson},
                                {"extract.json", R"({"tools": {}, "limits": {"max_depth": 100}})"},
                                {"deep.lua", R"(
extractor {
  id = "deep.leaf",
  tools = {"get_deep"},
  extract = function(output, call)
    local node, depth = output, 1
    while type(node) == "table" and node.next ~= nil do node, depth = node.next, depth + 1 end
    return {{category = "fact", key = "deep.leaf", value = node.leaf .. "@" .. depth}}
  end,
}
)"}});
  INFO((p.has_value() ? std::string() : p.error().ToString()));
  REQUIRE(p.has_value());
  CHECK(p.value()->max_json_depth() == 100);
  auto checker = PolicyChecker::Create(p.value());
  REQUIRE(checker.has_value());
  auto rules = ExtractionRules::FromPack(*p.value());
  REQUIRE(rules.has_value());
  Extractor extractor(rules.value(), ExtractorOptions{.checker = checker->get()});
  auto nested = [](int levels) {
    std::string text;
    for (int i = 1; i < levels; ++i) text += R"({"next": )";
    text += R"({"leaf": "bottom"})";
    text += std::string(levels - 1, '}');
    return text;
  };

  Extraction e = extractor.ExtractToolOutput(Call("get_deep"), nested(100));
  INFO(EncodeExtractionErrors(e.errors).dump());
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].value == "bottom@100");

  Extraction too_deep = extractor.ExtractToolOutput(Call("get_deep"), nested(101));
  CHECK(too_deep.updates.empty());
  REQUIRE(too_deep.errors.size() == 1);
  CHECK(too_deep.errors[0].code == "too_deep");
}

TEST_CASE("a pack's max_depth out of range is refused when the pack loads", "[extract][lua]") {
  auto p = RulePack::FromFiles(
      {{"pack.json", kPackJson}, {"extract.json", R"({"limits": {"max_depth": 513}})"}});
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().code() == StatusCode::kInvalidArgument);
  CHECK(p.error().message().find("max_depth must be an integer in 1..512") != std::string::npos);
}

}  // namespace
}  // namespace taskledger
