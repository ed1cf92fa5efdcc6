// Text rules for outputs that are not JSON, and user-message patterns: claimed
// identifiers and the confirmation bound to the pending action.
#include "extract_test_util.h"

namespace taskledger {
namespace {

using extract_test::Call;
using extract_test::Find;
using extract_test::Rules;
using nlohmann::json;

json TextRules() {
  return {{"tools",
           {{"find_user_id_by_email",
             {{{"id", "user.id"},
               {"text", "^([a-z]+(_[a-z]+)*_[0-9]+)$"},
               {"category", "identifier"},
               {"key", "user_id"},
               {"value", "{$1}"}},
              {{"id", "user.lookup_error"},
               {"text", "^Error: (.*)$"},
               {"category", "condition"},
               {"key", "lookup_error.{@email}"}}}},
            {"calculate",
             {{{"id", "calc"},
               {"text", "^[0-9]+(\\.[0-9]+)?$"},
               {"category", "fact"},
               {"key", "calc.{@expression}"},
               {"coerce", "number"}}}}}}};
}

TEST_CASE("a text rule pulls a bare id out of a non-JSON output", "[extract][text]") {
  Extractor ex(Rules(TextRules()));
  Extraction e = ex.ExtractToolOutput(Call("find_user_id_by_email", "c3", {{"email", "y@x.com"}}),
                                      "yusuf_rossi_9620");
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  const Update& u = e.updates[0];
  CHECK(u.category == Category::kIdentifier);
  CHECK(u.key == "user_id");
  CHECK(u.value == "yusuf_rossi_9620");
  CHECK(u.provenance.verified);
  CHECK(u.provenance.source == SourceKind::kToolOutput);
  CHECK(u.provenance.source_id == "find_user_id_by_email#c3");
  CHECK(u.provenance.rule_id == "user.id");
}

TEST_CASE("a text rule records an Error: string; the whole match is the default value",
          "[extract][text]") {
  Extractor ex(Rules(TextRules()));
  Extraction e = ex.ExtractToolOutput(Call("find_user_id_by_email", "c3", {{"email", "y@x.com"}}),
                                      "Error: user not found");
  REQUIRE(e.errors.empty());
  REQUIRE(e.updates.size() == 1);
  // The e-mail is one key segment: its dot is escaped (docs/rule-api.md, "Ids in keys").
  CHECK(e.updates[0].key == "lookup_error.y@x%2Ecom");
  CHECK(e.updates[0].value == "Error: user not found");

  Extraction calc = ex.ExtractToolOutput(Call("calculate", "c4", {{"expression", "2+3"}}), "5.0");
  REQUIRE(calc.updates.size() == 1);
  CHECK(calc.updates[0].value == 5.0);
}

TEST_CASE("text rules do not run on JSON outputs, nor mappings on text", "[extract][text]") {
  Extractor ex(
      Rules({{"tools",
              {{"t",
                {{{"id", "json"}, {"path", ""}, {"category", "fact"}, {"key", "whole"}},
                 {{"id", "text"}, {"text", ".+"}, {"category", "fact"}, {"key", "text"}}}}}}}));
  Extraction j = ex.ExtractToolOutput(Call("t"), R"( {"a": 1})");
  REQUIRE(j.updates.size() == 1);
  CHECK(j.updates[0].key == "whole");
  CHECK(j.updates[0].value == json{{"a", 1}});
  Extraction t = ex.ExtractToolOutput(Call("t"), "plain words");
  REQUIRE(t.updates.size() == 1);
  CHECK(t.updates[0].key == "text");
  CHECK(t.updates[0].value == "plain words");
}

json UserRules() {
  return {{"user",
           {{{"id", "user.email"},
             {"pattern", "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]+"},
             {"category", "identifier"},
             {"key", "email"}},
            {{"id", "user.order"},
             {"pattern", "#W[0-9]{7}"},
             {"category", "identifier"},
             {"key", "order_id.{$0}"}},
            {{"id", "user.zip"},
             {"pattern", "(^|[^0-9])([0-9]{5})([^0-9]|$)"},
             {"category", "identifier"},
             {"key", "zip"},
             {"value", "{$2}"}},
            {{"id", "user.order_status"},
             {"pattern", "order (#W[0-9]{7}) is (pending|delivered)"},
             {"icase", true},
             {"category", "fact"},
             {"key", "order.{$1}.status"},
             {"value", "{$2}"}},
            {{"id", "user.confirm"},
             {"pattern", "^[[:space:]]*(yes|y|yes please|confirm)[[:space:]!.]*$"},
             {"confirmation", true},
             {"icase", true}}}}};
}

TEST_CASE("user patterns pull claimed identifiers", "[extract][user]") {
  Extractor ex(Rules(UserRules()));
  Extraction e = ex.ExtractUserMessage(
      "Hi, I'm yusuf.rossi@example.com, zip 19122. Orders #W1234567 and #W7654321 please.");
  REQUIRE(e.errors.empty());
  const Update* email = Find(e, Category::kIdentifier, "email");
  REQUIRE(email != nullptr);
  CHECK(email->value == "yusuf.rossi@example.com");
  CHECK_FALSE(email->provenance.verified);
  CHECK(email->provenance.source == SourceKind::kUserMessage);
  CHECK(email->provenance.source_id == "user");
  CHECK(email->provenance.rule_id == "user.email");
  CHECK(email->provenance.pack_version == extract_test::kPackVersion);
  CHECK(Find(e, Category::kIdentifier, "zip")->value == "19122");
  // Every match counts: both order ids are recorded.
  CHECK(Find(e, Category::kIdentifier, "order_id.#W1234567")->value == "#W1234567");
  CHECK(Find(e, Category::kIdentifier, "order_id.#W7654321")->value == "#W7654321");
  CHECK(Find(e, Category::kCondition, "confirmation") == nullptr);
  // Seven digits of an order id are not a zip code.
  Extraction only_order = ex.ExtractUserMessage("it's #W1234567");
  CHECK(Find(only_order, Category::kIdentifier, "zip") == nullptr);
}

TEST_CASE("a confirmation binds the message to the pending action", "[extract][user]") {
  Extractor ex(Rules(UserRules()));
  json action = {{"tool", "cancel_pending_order"},
                 {"arguments", {{"order_id", "#W1234567"}, {"reason", "no longer needed"}}}};
  Extraction e = ex.ExtractUserMessage("  Yes please!", action);
  REQUIRE(e.errors.empty());
  const Update* c = Find(e, Category::kCondition, "confirmation");
  REQUIRE(c != nullptr);
  CHECK(c->value == json{{"text", "  Yes please!"}, {"action", action}});
  CHECK_FALSE(c->provenance.verified);
  CHECK(c->provenance.source == SourceKind::kUserMessage);
  CHECK(c->provenance.rule_id == "user.confirm");

  Extraction unbound = ex.ExtractUserMessage("yes");
  REQUIRE(Find(unbound, Category::kCondition, "confirmation") != nullptr);
  CHECK(Find(unbound, Category::kCondition, "confirmation")->value["action"].is_null());

  // "yes, but first ..." is not an explicit confirmation.
  CHECK(ex.ExtractUserMessage("yes but first tell me the price", action).updates.empty());
}

TEST_CASE("a pending action that cannot be stored drops the confirmation", "[extract][user]") {
  Extractor ex(Rules(UserRules()));
  json bad = {{"tool", "cancel_pending_order"},
              {"arguments", {{"reason", std::string("\xff\xfe")}}}};
  Extraction e = ex.ExtractUserMessage("yes", bad);
  CHECK(Find(e, Category::kCondition, "confirmation") == nullptr);
  REQUIRE(e.errors.size() == 1);
  CHECK(e.errors[0].code == "invalid_action");
  CHECK(e.errors[0].source == "user");
  CHECK(e.errors[0].rule == "user.confirm");
}

TEST_CASE("a bad user message yields an error and no updates", "[extract][user]") {
  auto spec = UserRules();
  spec["limits"] = {{"max_text_bytes", 64}};
  Extractor ex(Rules(spec));
  Extraction big = ex.ExtractUserMessage(std::string(65, 'y'));
  CHECK(big.updates.empty());
  REQUIRE(big.errors.size() == 1);
  CHECK(big.errors[0].code == "too_large");
  Extraction utf = ex.ExtractUserMessage("yes \xc3\x28");
  CHECK(utf.updates.empty());
  REQUIRE(utf.errors.size() == 1);
  CHECK(utf.errors[0].code == "invalid_utf8");
}

TEST_CASE("a message with NUL bytes is matched whole; long messages are refused",
          "[extract][user]") {
  Extractor ex(Rules(UserRules()));
  std::string msg = std::string("mail a@b.io") + '\0' + " then c@d.io";
  Extraction e = ex.ExtractUserMessage(msg);
  // Both addresses are found (the NUL does not end the message); the last wins the key.
  REQUIRE(e.updates.size() == 2);
  CHECK(e.updates[1].value == "c@d.io");
  // The longest accepted message, built to make the e-mail pattern work
  // hardest (every position starts a candidate), still completes.
  std::string worst(ex.rules().limits().max_text_bytes, 'a');
  Extraction slow = ex.ExtractUserMessage(worst);
  CHECK(slow.errors.empty());
  CHECK(slow.updates.empty());
  // One byte more is refused without running any pattern.
  Extraction refused = ex.ExtractUserMessage(worst + "@b.io");
  CHECK(refused.updates.empty());
  REQUIRE(refused.errors.size() == 1);
  CHECK(refused.errors[0].code == "too_large");
}

}  // namespace
}  // namespace taskledger
