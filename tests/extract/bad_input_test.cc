// Bad tool outputs never corrupt the ledger: malformed JSON, oversize output,
// 100,000 nested brackets, invalid UTF-8 each yield one structured error, no
// updates, and a committed turn whose state is unchanged but whose record
// (what audit reads) carries the error.
#include <memory>

#include "extract_test_util.h"
#include "taskledger/ledger/ledger.h"
#include "taskledger/ledger/memory_store.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Rules;
using nlohmann::json;

json StatusRules() {
  return {{"tools",
           {{"get_order_details",
             {{{"id", "order.status"},
               {"path", "/status"},
               {"category", "fact"},
               {"key", "order.{/order_id}.status"}}}}}}};
}

// A ledger whose version 1 holds order #W1 = "pending", verified.
struct Fixture {
  ManualClock clock;
  std::unique_ptr<Store> store = NewMemoryStore({}, clock);
  std::unique_ptr<Ledger> ledger;
  Extractor extractor{Rules(StatusRules()), {.clock = &clock}};

  Fixture() {
    auto l = Ledger::Open(*store, {"default", "bad-input"}, clock);
    REQUIRE(l.has_value());
    ledger = std::move(l).value();
    Extraction e = extractor.ExtractToolOutput(Call("get_order_details", "c0"),
                                               R"({"order_id": "#W1", "status": "pending"})");
    REQUIRE(e.updates.size() == 1);
    // Staged outside REQUIRE: the macro names its argument twice.
    Status staged = StageExtraction(*ledger, std::move(e));
    REQUIRE(staged.ok());
    REQUIRE(ledger->Commit().has_value());
  }

  // Extracts `output`, stages and commits it; checks the state did not move
  // and the turn record carries exactly one error with `code`.
  void ExpectRejected(const Extraction& e, const std::string& code) {
    CHECK(e.updates.empty());
    REQUIRE(e.errors.size() == 1);
    CHECK(e.errors[0].code == code);
    CHECK(e.errors[0].tool == "get_order_details");
    CHECK(e.errors[0].call_id == "c1");
    CHECK_FALSE(e.errors[0].rule.has_value());
    LedgerState before = ledger->head();
    REQUIRE(StageExtraction(*ledger, e).ok());
    auto v = ledger->Commit();
    REQUIRE(v.has_value());
    CHECK(ledger->head().entries == before.entries);
    auto turns = store->ReadTurns(ledger->id(), v.value(), v.value());
    REQUIRE(turns.has_value());
    REQUIRE(turns.value()[0].errors.size() == 1);
    CHECK(turns.value()[0].errors[0] == e.errors[0]);
    const Entry* status =
        ledger->head().FindLive(Category::kFact, "order.#W1.status", clock.NowMs());
    REQUIRE(status != nullptr);
    CHECK(status->value == "pending");
  }
};

TEST_CASE("malformed JSON yields an error and no updates", "[extract][bad]") {
  Fixture f;
  f.ExpectRejected(f.extractor.ExtractToolOutput(Call("get_order_details"),
                                                 R"({"order_id": "#W1", "status": "cancelled")"),
                   "malformed_json");
}

TEST_CASE("trailing garbage after a JSON document is malformed", "[extract][bad]") {
  Fixture f;
  f.ExpectRejected(f.extractor.ExtractToolOutput(Call("get_order_details"),
                                                 R"({"order_id": "#W1", "status": "cancelled"} x)"),
                   "malformed_json");
}

TEST_CASE("an output over the size limit yields an error", "[extract][bad]") {
  Fixture f;
  std::string pad(1u << 20, 'a');
  f.ExpectRejected(f.extractor.ExtractToolOutput(
                       Call("get_order_details"),
                       R"({"order_id": "#W1", "status": "cancelled", "pad": ")" + pad + "\"}"),
                   "too_large");
}

TEST_CASE("the size limit is configurable", "[extract][bad]") {
  auto spec = StatusRules();
  spec["limits"] = {{"max_output_bytes", 40}};
  Extractor ex(Rules(spec));
  CHECK(ex.ExtractToolOutput(Call("get_order_details"), R"({"order_id": "#W1", "status": "x"})")
            .updates.size() == 1);
  Extraction e = ex.ExtractToolOutput(Call("get_order_details"),
                                      R"({"order_id": "#W1", "status": "cancelled", "x": 1})");
  CHECK(e.updates.empty());
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].code == "too_large");
}

TEST_CASE("100,000 nested brackets are refused without overflowing the stack", "[extract][bad]") {
  Fixture f;
  std::string arrays = std::string(100'000, '[') + std::string(100'000, ']');
  f.ExpectRejected(f.extractor.ExtractToolOutput(Call("get_order_details"), arrays), "too_deep");
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100'000, '}');
  f.ExpectRejected(f.extractor.ExtractToolOutput(Call("get_order_details"), objects), "too_deep");
  // Unbalanced: never closed.
  f.ExpectRejected(
      f.extractor.ExtractToolOutput(Call("get_order_details"), std::string(100'000, '{')),
      "too_deep");
}

TEST_CASE("nesting up to the limit is fine; brackets inside strings do not count",
          "[extract][bad]") {
  Fixture f;
  std::string deep = R"({"order_id": "#W1", "status": "cancelled", "x": )" + std::string(63, '[') +
                     std::string(63, ']') + R"(, "s": ")" + std::string(1000, '[') + "\"}";
  Extraction e = f.extractor.ExtractToolOutput(Call("get_order_details"), deep);
  CHECK(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  CHECK(e.updates[0].value == "cancelled");
  std::string too_deep = R"({"x": )" + std::string(64, '[') + std::string(64, ']') + "}";
  CHECK(f.extractor.ExtractToolOutput(Call("get_order_details"), too_deep).errors[0].code ==
        "too_deep");
}

TEST_CASE("invalid UTF-8 yields an error", "[extract][bad]") {
  Fixture f;
  for (const char* bad : {"\xff", "\xc3\x28", "\xe2\x82", "\xed\xa0\x80" /* surrogate */,
                          "\xc0\xaf" /* overlong */, "\xf4\x90\x80\x80" /* > U+10FFFF */}) {
    INFO(json(std::string(bad)).dump(-1, ' ', true, json::error_handler_t::replace));
    f.ExpectRejected(f.extractor.ExtractToolOutput(
                         Call("get_order_details"),
                         std::string(R"({"order_id": "#W1", "status": ")") + bad + "\"}"),
                     "invalid_utf8");
  }
  // Valid multi-byte text passes.
  Extraction ok = f.extractor.ExtractToolOutput(
      Call("get_order_details"), R"({"order_id": "#W1", "status": "zurückgestellt €𝄞"})");
  CHECK(ok.errors.empty());
  CHECK(ok.updates.size() == 1);
}

TEST_CASE("a parsed output is held to the same limits", "[extract][bad]") {
  Fixture f;
  // 100,000 levels built by the caller: checked iteratively, refused.
  json deep = 1;
  for (int i = 0; i < 100'000; ++i) deep = json::array({std::move(deep)});
  json wrapped = {{"order_id", "#W1"}, {"status", "cancelled"}, {"x", std::move(deep)}};
  f.ExpectRejected(f.extractor.ExtractParsedToolOutput(Call("get_order_details"), wrapped),
                   "too_deep");

  json bad_utf8 = {{"order_id", "#W1"}, {"status", std::string("can\xff")}};
  f.ExpectRejected(f.extractor.ExtractParsedToolOutput(Call("get_order_details"), bad_utf8),
                   "invalid_utf8");
  json bad_key = {{"order_id", "#W1"}, {"status", "cancelled"}, {std::string("\xff"), 1}};
  f.ExpectRejected(f.extractor.ExtractParsedToolOutput(Call("get_order_details"), bad_key),
                   "invalid_utf8");

  json big = {{"order_id", "#W1"}, {"status", "cancelled"}, {"pad", std::string(1u << 20, 'a')}};
  f.ExpectRejected(f.extractor.ExtractParsedToolOutput(Call("get_order_details"), big),
                   "too_large");
}

TEST_CASE("a text output over the text limit is refused", "[extract][bad]") {
  Extractor ex(Rules(
      {{"tools", {{"t", {{{"id", "r"}, {"text", "x"}, {"category", "fact"}, {"key", "k"}}}}}}}));
  Extraction e = ex.ExtractToolOutput(Call("t"), std::string((8u << 10) + 1, 'x'));
  CHECK(e.updates.empty());
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].code == "too_large");
}

}  // namespace
}  // namespace taskledger
