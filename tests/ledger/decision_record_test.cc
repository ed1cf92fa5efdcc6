// Typed decision records (taskledger/ledger/decision_record.h): turn records
// a 0.1 / 0.2 Redis store wrote still decode, field by field, and re-encode to
// the very bytes that were stored; records with reads and with members this
// version does not know round-trip through the codec and the direct CBOR
// writer alike; a decision of the wrong shape is Corruption naming the field.
#include <catch2/catch.hpp>

#include <string>

#include "internal/redis_records.h"
#include "taskledger/ledger/codec.h"

namespace taskledger {
namespace {

using nlohmann::json;

// The turn record (field `t` of stream entry 0-1) a build of 2026-11-24 05:33
// (decision records as 0.1 wrote them) stored for the first turn of
// retail_violations.jsonl's auth_before_action-000, replayed with that day's
// retail pack. Read back with XRANGE from that store.
const char kStoredTurnHex[] =
    "a56261741b000001a20cd3b8c46563616c6c7381a66461726773a2686f726465725f69646923573639353838"
    "343066726561736f6e706e6f206c6f6e676572206e6565646564626964626330676f7574636f6d656664656e"
    "69656464746f6f6c7463616e63656c5f70656e64696e675f6f72646572647475726e0166777269746573f569"
    "6465636973696f6e7381ae69617267735f686173687840393134643362383465366437616335623338353135"
    "3731376538353739313762343038386132663333666563353531623161303239646530633535626532376667"
    "63616c6c5f69646263306c636f6e766572736174696f6e78386f6c642d2f72657461696c2d76696f6c617469"
    "6f6e2d746175312d72657461696c2d617574685f6265666f72655f616374696f6e2d30303068646563697369"
    "6f6e6464656e796a6c6174656e63795f757318216c7061636b5f76657273696f6e7840326139353664656332"
    "3631613330353766313266303038343862656233326236633436303662623039373330323535636665623233"
    "333537613461326465653669726561645f6f6e6c79f466726561736f6e78c97468652075736572206973206e"
    "6f742061757468656e74696361746564207965743a206265666f72652063616e63656c5f70656e64696e675f"
    "6f726465722c2061736b20666f7220746865697220656d61696c20616e64206c6f6f6b206974207570207769"
    "74682066696e645f757365725f69645f62795f656d61696c20286f72207468656972206669727374206e616d"
    "652c206c617374206e616d6520616e64207a697020636f646520776974682066696e645f757365725f69645f"
    "62795f6e616d655f7a6970296472756c65781972657461696c2e617574685f6265666f72655f616374696f6e"
    "6572756c657381a3626964781972657461696c2e617574685f6265666f72655f616374696f6e676f7574636f"
    "6d656464656e7966726561736f6e78c97468652075736572206973206e6f742061757468656e746963617465"
    "64207965743a206265666f72652063616e63656c5f70656e64696e675f6f726465722c2061736b20666f7220"
    "746865697220656d61696c20616e64206c6f6f6b20697420757020776974682066696e645f757365725f6964"
    "5f62795f656d61696c20286f72207468656972206669727374206e616d652c206c617374206e616d6520616e"
    "64207a697020636f646520776974682066696e645f757365725f69645f62795f6e616d655f7a6970296b7374"
    "616765645f7365656e0164746f6f6c7463616e63656c5f70656e64696e675f6f72646572647475726e016c76"
    "657273696f6e5f7365656e00647475726e01677570646174657381aa6863617465676f727969636f6e646974"
    "696f6e636b65796c636f6e6669726d6174696f6e626f7063736574647061636b784032613935366465633236"
    "3161333035376631326630303834386265623332623663343630366262303937333032353563666562323333"
    "353761346132646565366472756c656c757365722e636f6e6669726d66736f75726365647573657269736f75"
    "7263655f69646475736572647475726e016576616c7565a266616374696f6ea269617267756d656e7473a268"
    "6f726465725f69646923573639353838343066726561736f6e706e6f206c6f6e676572206e65656465646474"
    "6f6f6c7463616e63656c5f70656e64696e675f6f72646572647465787463796573687665726966696564f4";

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

DecisionRecord Sample() {
  DecisionRecord d;
  d.conversation = "conv-1";
  d.turn = 4;
  d.version_seen = 3;
  d.staged_seen = 2;
  d.tool = "refund_order";
  d.call_id = "c9";
  d.args_hash = "ab12";
  d.decision = "deny";
  d.rule = "retail.refund_cap";
  d.reason = "over the cap";
  d.pack_version = "p1";
  d.latency_us = 17;
  RuleResult allow{"retail.auth", "allow", "", false, {}, {}};
  EntryRead seen{Category::kFact,
                 "order.#W1.total",
                 true,
                 "00ff00ff00ff00ff",
                 2,
                 SourceKind::kToolOutput,
                 "get_order_details#c3",
                 "order_total",
                 true};
  EntryRead claimed{Category::kIdentifier,
                    "user_id",
                    true,
                    "1234567890abcdef",
                    1,
                    SourceKind::kUserMessage,
                    "user",
                    "",
                    false};
  EntryRead absent{
      Category::kCondition, "confirmation", false, "", 0, SourceKind::kAgent, "", "", false};
  RuleResult deny{"retail.refund_cap",    "deny", "over the cap", false, {"total 120"},
                  {seen, claimed, absent}};
  RuleResult broken{"retail.broken", "deny", "policy error", true, {}, {}};
  d.rules = {allow, deny, broken};
  return d;
}

}  // namespace

TEST_CASE(
    "decision records: a turn stored by 0.1 / 0.2 reads back typed and re-encodes to its bytes",
    "[ledger]") {
  const std::string stored = Unhex(kStoredTurnHex);
  json j = json::from_cbor(stored, true, false);
  REQUIRE_FALSE(j.is_discarded());
  auto turn = DecodeTurn(j);
  REQUIRE(turn.has_value());
  REQUIRE(turn->decisions.size() == 1);
  const DecisionRecord& d = turn->decisions[0];
  CHECK(d.call_id == "c0");
  CHECK(d.tool == "cancel_pending_order");
  CHECK(d.decision == "deny");
  CHECK(d.rule == "retail.auth_before_action");
  CHECK_FALSE(d.reason.empty());
  CHECK(d.conversation == "old-/retail-violation-tau1-retail-auth_before_action-000");
  CHECK(d.args_hash.size() == 64);
  REQUIRE_FALSE(d.rules.empty());
  CHECK(d.deciding() != nullptr);
  CHECK(d.deciding()->outcome == "deny");
  CHECK(d.extra.empty());
  for (const RuleResult& r : d.rules) CHECK(r.reads.empty());  // 0.2 kept no reads
  // Nothing was lost or added: the direct writer gives back the stored bytes.
  CHECK(internal::TurnRecordBytes(*turn) == stored);
}

TEST_CASE("decision records: reads and unknown members round-trip byte-identically", "[ledger]") {
  TurnRecord t;
  t.turn = 4;
  t.committed_at_ms = 1'700'000'000'000;
  DecisionRecord plain = Sample();
  DecisionRecord newer = Sample();
  newer.call_id = "c10";
  newer.extra = {{"provenance", {{"index", 3}}}, {"zz_later", true}};
  t.decisions = {plain, newer};
  std::string cbor;
  json::to_cbor(EncodeTurn(t), cbor);
  CHECK(internal::TurnRecordBytes(t) == cbor);
  auto back = DecodeTurn(json::from_cbor(cbor));
  REQUIRE(back.has_value());
  CHECK(back->decisions == t.decisions);
  const json enc = EncodeDecision(plain);
  CHECK(enc["rules"][1]["reads"][0] == json{{"category", "fact"},
                                            {"key", "order.#W1.total"},
                                            {"present", true},
                                            {"digest", "00ff00ff00ff00ff"},
                                            {"turn", 2},
                                            {"source", "tool"},
                                            {"source_id", "get_order_details#c3"},
                                            {"rule", "order_total"},
                                            {"verified", true}});
  CHECK(enc["rules"][1]["reads"][2] ==
        json{{"category", "condition"}, {"key", "confirmation"}, {"present", false}});
  CHECK_FALSE(enc["rules"][0].contains("reads"));
  CHECK(EncodeDecision(newer)["provenance"]["index"] == 3);
}

TEST_CASE("decision records: a wrong shape is Corruption naming the field", "[ledger]") {
  json good = EncodeDecision(Sample());
  CHECK(DecodeDecision(json("plain")).error().message().find("expected an object") !=
        std::string::npos);
  json bad = good;
  bad["version_seen"] = "three";
  CHECK(DecodeDecision(bad).error().message().find("'version_seen'") != std::string::npos);
  bad = good;
  bad["rules"][1]["reads"][0]["category"] = "planet";
  CHECK(DecodeDecision(bad).error().message().find("planet") != std::string::npos);
  bad = good;
  bad["rules"] = json::object();
  CHECK(DecodeDecision(bad).error().message().find("'rules' is not an array") != std::string::npos);
  json turn = {{"turn", 1}, {"updates", json::array()}, {"decisions", {good, 7}}};
  auto t = DecodeTurn(turn);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().code() == StatusCode::kCorruption);
}

}  // namespace taskledger
