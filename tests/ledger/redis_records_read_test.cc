// The direct record readers (ReadStateRecord / ReadTurnRecord,
// internal/redis_records.h) against the codec they stand in for: every record
// the writers write is read to the very record the codec reads (compared by
// the bytes it writes back, which also holds for NaN values); bytes in any
// other shape are declined, and the stream's decoders then give the codec's
// value or error; a source's output is kept as stored only in CborValue's own
// form; a snapshot read back shares its provenance strings; deep nesting is
// declined, not a crash.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "internal/cbor_reader.h"
#include "internal/redis_records.h"
#include "internal/redis_stream.h"
#include "record_fixtures.h"
#include "taskledger/ledger/codec.h"

using namespace taskledger;
using namespace taskledger::test;
using nlohmann::json;

namespace {

json FromCbor(const std::string& bytes) {
  return json::from_cbor(bytes, true, false, json::cbor_tag_handler_t::store);
}

LedgerState EveryKindOfState() {
  const auto values = Values();
  LedgerState s;
  s.version = 300;
  for (size_t i = 0; i < values.size(); ++i) {
    Entry e;
    e.value = values[i];
    e.provenance =
        MakeUpdate(UpdateOp::kSet, Category::kFact, "", nullptr, static_cast<int>(i)).provenance;
    if (i % 2 == 0) e.expires_at_turn = 301 + i;
    if (i % 3 == 0) e.expires_at_ms = i % 2 ? -7 : 1'700'000'000'000;
    s.of(static_cast<Category>(i % kCategoryCount)).emplace("k" + std::to_string(i), e);
  }
  s.calls = {CallRecord{1, {"c1", "lookup", {{"q", 1}}}, false, "ok"},
             CallRecord{2, {"", "refund", json::array()}, true, ""}};
  return s;
}

TurnRecord EveryKindOfTurn() {
  const auto values = Values();
  TurnRecord t;
  t.turn = 42;
  t.committed_at_ms = -3;
  for (size_t i = 0; i < values.size(); ++i) {
    t.updates.push_back(MakeUpdate(static_cast<UpdateOp>(i % 3),
                                   static_cast<Category>(i % kCategoryCount),
                                   "key." + std::to_string(i), values[i], static_cast<int>(i)));
  }
  t.calls = {CallRecord{42, {"c1", "refund_order", {{"order", "A-1"}}}, true, "ok"}};
  DecisionRecord d;
  d.rules = {{"r1", "deny", "no", true, {"a line"}, {}}};
  t.decisions = {d, DecisionRecord{}};
  t.errors = {DecodeExtractionError(json{{"error", "bad"}, {"at", -1}})};
  SourceRecord page;
  page.turn = 42;
  page.tool = "get_webpage";
  page.call_id = "c1";
  page.content = CborValue::Encode(json{{"body", std::string(5000, 'x')}});
  SourceRecord user;
  user.kind = SourceRecord::Kind::kUserMessage;
  user.turn = 41;
  user.refused = "user message over 2097152 bytes";
  t.sources = {page, user};
  return t;
}

// A CBOR text string (shorter than 24 bytes).
std::string Text(const std::string& s) { return static_cast<char>(0x60 + s.size()) + s; }

}  // namespace

TEST_CASE("record readers: every record the writers write reads as the codec reads it", "[redis]") {
  const LedgerState state = EveryKindOfState();
  const std::string state_bytes = internal::StateRecordBytes(state);
  auto read_state = internal::ReadStateRecord(state_bytes);
  REQUIRE(read_state.has_value());
  CHECK(internal::StateRecordBytes(*read_state) == state_bytes);
  auto codec_state = DecodeState(FromCbor(state_bytes));
  REQUIRE(codec_state.has_value());
  CHECK(internal::StateRecordBytes(codec_state.value()) == state_bytes);
  CHECK(read_state->size() == state.size());
  CHECK(read_state->calls == state.calls);

  const TurnRecord turn = EveryKindOfTurn();
  const std::string turn_bytes = internal::TurnRecordBytes(turn);
  auto read_turn = internal::ReadTurnRecord(turn_bytes);
  REQUIRE(read_turn.has_value());
  CHECK(internal::TurnRecordBytes(*read_turn) == turn_bytes);
  auto codec_turn = DecodeTurn(FromCbor(turn_bytes));
  REQUIRE(codec_turn.has_value());
  CHECK(internal::TurnRecordBytes(codec_turn.value()) == turn_bytes);
  CHECK(read_turn->sources == turn.sources);
  CHECK(read_turn->decisions == turn.decisions);

  // Without NaN, the records compare equal too; and the empty ones.
  TurnRecord plain = turn;
  plain.updates.resize(20);
  CHECK(internal::ReadTurnRecord(internal::TurnRecordBytes(plain)) == plain);
  CHECK(internal::ReadTurnRecord(internal::TurnRecordBytes(TurnRecord{})) == TurnRecord{});
  CHECK(internal::ReadStateRecord(internal::StateRecordBytes(LedgerState{})) == LedgerState{});
}

TEST_CASE("record readers: other shapes are declined and the codec decides", "[redis]") {
  const std::string one_fact =
      Text("facts") + "\xa1" + Text("k") + "\xa2" + Text("value") + "\x01" + Text("turn") + "\x02";
  auto snapshot = [](const std::string& bytes) {
    internal::StreamEntry entry;
    entry.version = 2;
    entry.turn = &bytes;  // unused by the snapshot decoder
    entry.state = &bytes;
    return internal::DecodeSnapshotEntry(entry, "conversation c");
  };

  SECTION("members in another order and unknown members are read") {
    const std::string bytes = "\xa3" + Text("version") + "\x02" + Text("future") + "\x82\xf6\xa1" +
                              Text("x") + "\xf5" + one_fact;
    auto read = internal::ReadStateRecord(bytes);
    REQUIRE(read.has_value());
    CHECK(read->version == 2);
    CHECK(read->of(Category::kFact).at("k").value == 1);
    CHECK(read->of(Category::kFact).at("k").provenance.source == SourceKind::kAgent);
    CHECK(read == DecodeState(FromCbor(bytes)).value());
  }
  SECTION("a member twice: declined; the codec keeps the last") {
    const std::string bytes =
        "\xa3" + Text("version") + "\x01" + one_fact + Text("version") + "\x02";
    CHECK_FALSE(internal::ReadStateRecord(bytes).has_value());
    auto decoded = snapshot(bytes);
    REQUIRE(decoded.has_value());
    CHECK(decoded->version == 2);
    CHECK(decoded->of(Category::kFact).size() == 1);
  }
  SECTION("an indefinite-length map: declined; the codec reads it") {
    const std::string bytes = "\xbf" + Text("version") + "\x02" + one_fact + "\xff";
    CHECK_FALSE(internal::ReadStateRecord(bytes).has_value());
    auto decoded = snapshot(bytes);
    REQUIRE(decoded.has_value());
    CHECK(decoded->of(Category::kFact).at("k").provenance.turn == 2);
  }
  SECTION("a null or mistyped member: declined; the codec's error") {
    const std::string null_version = "\xa2" + Text("version") + "\xf6" + one_fact;
    CHECK_FALSE(internal::ReadStateRecord(null_version).has_value());
    CHECK(snapshot(null_version).error().message() ==
          "snapshot 2 of conversation c: state: missing 'version'");
    std::string negative_turn = "\xa2" + Text("version") + "\x02" + one_fact;
    negative_turn.back() = '\x21';  // the entry's turn: -2
    CHECK_FALSE(internal::ReadStateRecord(negative_turn).has_value());
    CHECK(snapshot(negative_turn).error().message() ==
          "snapshot 2 of conversation c: entry: 'turn' has the wrong type");
  }
  SECTION("trailing or missing bytes: declined; undecodable") {
    const std::string whole = "\xa2" + Text("version") + "\x02" + one_fact;
    for (const std::string& bad :
         {whole + std::string(1, '\0'), whole.substr(0, whole.size() - 1)}) {
      CHECK_FALSE(internal::ReadStateRecord(bad).has_value());
      CHECK(snapshot(bad).error().message() == "snapshot 2 of conversation c: undecodable record");
    }
  }
  SECTION(
      "a binary value's subtype: read in the writer's 1-byte tag, declined as an immediate tag") {
    auto with_value = [&](const std::string& value) {
      return "\xa2" + Text("version") + "\x02" + Text("facts") + "\xa1" + Text("k") + "\xa2" +
             Text("value") + value + Text("turn") + "\x02";
    };
    // The writer's form (nlohmann's): tag 0xd8 0x07 before the bytes.
    const std::string tagged = with_value(std::string("\xd8\x07\x42\x01\x02", 5));
    auto read = internal::ReadStateRecord(tagged);
    REQUIRE(read.has_value());
    CHECK(read->of(Category::kFact).at("k").value == json::binary({1, 2}, 7));
    CHECK(read == snapshot(tagged).value());
    // Tag 22 in the initial byte: nlohmann's reader refuses it, so the
    // direct reader may not read it either.
    const std::string immediate = with_value(std::string("\xd6\x42\x01\x02", 4));
    CHECK_FALSE(internal::ReadStateRecord(immediate).has_value());
    CHECK(snapshot(immediate).error().message() ==
          "snapshot 2 of conversation c: undecodable record");
  }
  SECTION("a turn without its version, or with an update without a key") {
    TurnRecord t;
    t.turn = 3;
    json doc = FromCbor(internal::TurnRecordBytes(t));
    doc.erase("turn");
    CHECK_FALSE(internal::ReadTurnRecord(ViaDom(doc)).has_value());
    doc["turn"] = 3;
    doc["updates"] = json::array({json{{"category", "fact"}, {"value", 1}}});
    CHECK_FALSE(internal::ReadTurnRecord(ViaDom(doc)).has_value());
    CHECK(DecodeTurn(doc).error().message() == "update: missing 'key'");
  }
}

TEST_CASE("record readers: a snapshot read back shares its provenance strings", "[redis]") {
  LedgerState s;
  s.version = 9;
  for (int i = 0; i < 3; ++i) {
    Entry e;
    e.value = i;
    e.provenance = {4,    SourceKind::kToolOutput, "get_order_details#c1",
                    true, "order.items",           "sha256:pack"};
    s.of(Category::kFact).emplace("order.item." + std::to_string(i), e);
  }
  auto read = internal::ReadStateRecord(internal::StateRecordBytes(s));
  REQUIRE(read.has_value());
  CHECK(*read == s);
  const EntryMap& facts = read->of(Category::kFact);
  const Provenance& first = facts.at("order.item.0").provenance;
  for (const auto& [key, entry] : facts) {
    CHECK(entry.provenance.source_id.data() == first.source_id.data());
    CHECK(entry.provenance.rule_id.data() == first.rule_id.data());
    CHECK(entry.provenance.pack_version.data() == first.pack_version.data());
  }
}

TEST_CASE("record readers: a value nested past the reader's depth is declined", "[redis]") {
  const int depth = internal::CborReader::kMaxDepth + 10;
  std::string value(static_cast<size_t>(depth), '\x81');  // [[[...]]]
  value += '\x01';
  const std::string bytes = "\xa2" + Text("version") + "\x01" + Text("facts") + "\xa1" + Text("k") +
                            "\xa1" + Text("value") + value;
  CHECK_FALSE(internal::ReadStateRecord(bytes).has_value());
  // Just within the depth: read.
  std::string shallow(static_cast<size_t>(internal::CborReader::kMaxDepth - 4), '\x81');
  shallow += '\x01';
  auto read = internal::ReadStateRecord("\xa2" + Text("version") + "\x01" + Text("facts") + "\xa1" +
                                        Text("k") + "\xa1" + Text("value") + shallow);
  CHECK(read.has_value());
}

TEST_CASE("record readers: a source's output is kept as stored only in CborValue's own form",
          "[redis]") {
  // {"id":"c1","kind":"tool","output":<output>,"tool":"t","turn":1} in a turn 1.
  auto turn_with_output = [](const std::string& output) {
    return "\xa2" + Text("sources") + "\x81\xa5" + Text("id") + Text("c1") + Text("kind") +
           Text("tool") + Text("output") + output + Text("tool") + Text("t") + Text("turn") +
           "\x01" + Text("turn") + "\x01";
  };
  auto via_stream = [](const std::string& bytes) {
    internal::StreamEntry entry;
    entry.version = 1;
    entry.turn = &bytes;
    return internal::DecodeTurnEntry(entry, "conversation c");
  };
  SECTION("the writer's bytes: kept as they are") {
    const json value = {{"a", 1.5}, {"b", {1, -2, nullptr, true, 1e300, "\xc3\xa9"}}};
    const CborValue stored = CborValue::Encode(value);
    auto read = internal::ReadTurnRecord(turn_with_output(std::string(stored.bytes())));
    REQUIRE(read.has_value());
    REQUIRE(read->sources.size() == 1);
    CHECK(read->sources[0].content == stored);
    CHECK(read->sources[0].content.Decode() == value);
    CHECK(read->sources[0].tool == "t");
    CHECK(read->sources[0].call_id == "c1");
  }
  // Each of these holds a value the writer would write otherwise: declined,
  // and the codec's reading re-encodes it.
  const std::vector<std::pair<std::string, json>> other_forms = {
      {std::string("\x78\x01") + "x", "x"},  // a text head longer than needed
      {std::string("\x18\x05"), 5},          // an integer head longer than needed
      {"\xa2" + Text("b") + "\x01" + Text("a") + "\x02",
       json{{"a", 2}, {"b", 1}}},                                     // keys out of order
      {std::string("\xfb\x3f\xf8\x00\x00\x00\x00\x00\x00", 9), 1.5},  // a double exact as float32
      {std::string("\xfa\x7f\xc0\x00\x00", 5), nullptr},              // NaN as float32
  };
  for (const auto& [output, value] : other_forms) {
    const std::string bytes = turn_with_output(output);
    CHECK_FALSE(internal::ReadTurnRecord(bytes).has_value());
    auto decoded = via_stream(bytes);
    INFO((decoded.has_value() ? std::string() : decoded.error().message()));
    REQUIRE(decoded.has_value());
    REQUIRE(decoded->sources.size() == 1);
    const json back = decoded->sources[0].content.Decode();
    if (value.is_null()) {
      CHECK(std::isnan(back.get<double>()));
    } else {
      CHECK(back == value);
    }
    CHECK(decoded->sources[0].content == CborValue::Encode(back));
  }
}
