// Lua extractors on user messages: an extractor{} declaring `user = true`
// runs on every user message after the extract.json user patterns, its
// updates are claims (source user, unverified), one that fails loses only its
// own updates, and an extractor without `user` (every 0.1 pack's) never sees
// a user message.
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
    R"({"name": "user-lua", "tools": {"read_only": ["get_*"], "writes": ["send_money"]}})";

const char* kExtractJson = R"json({"user": [
  {"id": "user.order", "pattern": "order (#W[0-9]+)", "category": "fact", "key": "order.id",
   "value": "{$1}"}]})json";

const char* kExtractors = R"(
extractor {
  id = "a.iban",
  user = true,
  extract = function(text, call)
    assert(call == nil)
    local out = {}
    for _, t in ipairs(std.tokens(text, "account")) do
      out[#out + 1] = {category = "fact", key = "user.account." .. (#out + 1), value = t}
    end
    return out
  end,
}
extractor {
  id = "b.fails",
  user = true,
  tools = {"get_balance"},
  extract = function(output, call)
    if type(output) == "string" and output:find("boom") then error("cannot read this message") end
    return {{category = "fact", key = "b.ran", value = call and "tool" or "user"}}
  end,
}
extractor {
  id = "c.tools_only",
  tools = {"*"},
  extract = function(output, call)
    return {{category = "fact", key = "c.ran", value = true}}
  end,
}
extractor {
  id = "d.bad_key",
  user = true,
  extract = function(text, call)
    if text:find("badkey") then return {{category = "fact", key = "", value = 1}} end
    return nil
  end,
}
)";

struct UserLuaFixture {
  std::shared_ptr<const RulePack> pack;
  std::unique_ptr<PolicyChecker> checker;
  std::unique_ptr<Extractor> extractor;

  explicit UserLuaFixture(const char* extractors = kExtractors) {
    auto p = RulePack::FromFiles(
        {{"pack.json", kPackJson}, {"extract.json", kExtractJson}, {"extractors.lua", extractors}});
    INFO((p.has_value() ? std::string() : p.error().ToString()));
    REQUIRE(p.has_value());
    pack = p.value();
    CheckerLimits limits;
    limits.instruction_budget = 200'000;
    auto c = PolicyChecker::Create(pack, limits);
    REQUIRE(c.has_value());
    checker = std::move(c).value();
    auto rules = ExtractionRules::FromPack(*pack);
    REQUIRE(rules.has_value());
    extractor =
        std::make_unique<Extractor>(rules.value(), ExtractorOptions{.checker = checker.get()});
  }
};

TEST_CASE("user-message extractors yield claims after the user patterns", "[extract][lua][user]") {
  UserLuaFixture f;
  CHECK(f.checker->HasUserExtractors());
  Extraction e = f.extractor->ExtractUserMessage(
      "Pay order #W42 to DE89 3704 0044 0532 0130 00 please, and also GB82WEST12345698765432");
  INFO(EncodeExtractionErrors(e.errors).dump());
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 4);
  CHECK(e.updates[0].key == "order.id");  // the extract.json pattern first
  CHECK(e.updates[0].value == "#W42");
  const Update* first = Find(e, Category::kFact, "user.account.1");
  const Update* second = Find(e, Category::kFact, "user.account.2");
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(first->value == "DE89 3704 0044 0532 0130 00");
  CHECK(second->value == "GB82WEST12345698765432");
  CHECK(first->provenance.source == SourceKind::kUserMessage);
  CHECK(first->provenance.source_id == "user");
  CHECK_FALSE(first->provenance.verified);
  CHECK(first->provenance.rule_id == "a.iban");
  CHECK(first->provenance.pack_version == f.pack->version());
  CHECK(Find(e, Category::kFact, "b.ran")->value == "user");  // call is nil for a message
  CHECK(Find(e, Category::kFact, "c.ran") == nullptr);        // tools only: never on messages
}

TEST_CASE("an extractor with user = true still runs on its tools' outputs, as evidence",
          "[extract][lua][user]") {
  UserLuaFixture f;
  Extraction e = f.extractor->ExtractToolOutput(Call("get_balance", "c1"), R"({"balance": 3})");
  REQUIRE(e.errors.empty());
  const Update* ran = Find(e, Category::kFact, "b.ran");
  REQUIRE(ran != nullptr);
  CHECK(ran->value == "tool");
  CHECK(ran->provenance.verified);
  CHECK(ran->provenance.source_id == "get_balance#c1");
  CHECK(Find(e, Category::kFact, "c.ran") != nullptr);
  CHECK(Find(e, Category::kFact, "user.account.1") == nullptr);  // a.iban has no tools
}

TEST_CASE("a failing user-message extractor loses only its own updates", "[extract][lua][user]") {
  UserLuaFixture f;
  Extraction e = f.extractor->ExtractUserMessage("boom: order #W7, badkey, NL91ABNA0417164300");
  REQUIRE(e.errors.size() == 2);
  CHECK(e.errors[0].source == "user");
  CHECK(e.errors[0].rule == "b.fails");
  CHECK(e.errors[0].code == "extractor_failed");
  CHECK_THAT(e.errors[0].message.value_or(""), Catch::Contains("cannot read this message"));
  CHECK(e.errors[1].rule == "d.bad_key");
  CHECK(e.errors[1].code == "extractor_failed");
  CHECK_THAT(e.errors[1].message.value_or(""), Catch::Contains("non-empty string"));
  CHECK(Find(e, Category::kFact, "b.ran") == nullptr);
  CHECK(Find(e, Category::kFact, "order.id")->value == "#W7");
  CHECK(Find(e, Category::kFact, "user.account.1")->value == "NL91ABNA0417164300");

  // Bad input reaches no extractor and is one clear error.
  Extraction bad = f.extractor->ExtractUserMessage("\xff\xfe NL91ABNA0417164300");
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0].code == "invalid_utf8");
  CHECK(bad.updates.empty());
}

TEST_CASE("a user-message extractor's claim never replaces a tool's evidence",
          "[extract][lua][user]") {
  UserLuaFixture f;
  ManualClock clock;
  auto store = NewMemoryStore({}, clock);
  auto ledger = Ledger::Open(*store, {"default", "user-lua"}, clock);
  REQUIRE(ledger.has_value());
  Ledger& l = *ledger.value();
  Update evidence;
  evidence.category = Category::kFact;
  evidence.key = "user.account.1";
  evidence.value = "DE89370400440532013000";
  evidence.provenance = {0, SourceKind::kToolOutput, "get_balance#c0", true, "x", "v"};
  REQUIRE(l.Stage(evidence).ok());
  REQUIRE(l.Commit().has_value());
  REQUIRE(StageExtraction(l, f.extractor->ExtractUserMessage("send it to GB82WEST12345698765432"))
              .ok());
  REQUIRE(l.Commit().has_value());
  const Entry* e = l.head().FindLive(Category::kFact, "user.account.1", clock.NowMs());
  REQUIRE(e != nullptr);
  CHECK(e->value == "DE89370400440532013000");
  CHECK(e->provenance.verified);
  const Entry* ran = l.head().FindLive(Category::kFact, "b.ran", clock.NowMs());
  REQUIRE(ran != nullptr);
  CHECK_FALSE(ran->provenance.verified);
}

TEST_CASE("extractor declarations: user must be a boolean, tools needed without it",
          "[extract][lua][user]") {
  auto load = [](const char* lua) {
    return RulePack::FromFiles({{"pack.json", kPackJson}, {"x.lua", lua}});
  };
  auto not_bool = load(R"(extractor { id = "x", user = "yes", extract = function() end })");
  REQUIRE_FALSE(not_bool.has_value());
  CHECK_THAT(not_bool.error().message(), Catch::Contains("user must be a boolean"));
  auto no_tools = load(R"(extractor { id = "x", user = false, extract = function() end })");
  REQUIRE_FALSE(no_tools.has_value());
  CHECK_THAT(no_tools.error().message(), Catch::Contains("tools must list at least one"));
  auto user_only = load(R"(extractor { id = "x", user = true, extract = function() end })");
  REQUIRE(user_only.has_value());
  REQUIRE(user_only.value()->extractors().size() == 1);
  CHECK(user_only.value()->extractors()[0].user);
  CHECK(user_only.value()->extractors()[0].tools.empty());
}

}  // namespace
}  // namespace taskledger
