// The Redis store's direct record writers (internal/redis_records.h) must
// produce exactly the stored form docs/redis-keys.md defines, CBOR of the
// codec's JSON documents: byte-identical to to_cbor(EncodeTurn / EncodeState),
// for records that use every optional field and every kind of JSON value, and
// decoding back (from_cbor + DecodeTurn / DecodeState) to the very record.
// A stored turn written by an older build therefore still matches, byte for
// byte, a retried commit of the same turn from this one.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "internal/redis_records.h"
#include "record_fixtures.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/decision_bytes.h"
#include "taskledger/ledger/extraction_error.h"

using namespace taskledger;
using namespace taskledger::test;
using nlohmann::json;

TEST_CASE("redis records: turns are byte-identical to the codec's CBOR", "[redis]") {
  const auto values = Values();
  TurnRecord t;
  t.turn = 42;
  t.committed_at_ms = 1'700'000'000'123;
  for (size_t i = 0; i < values.size(); ++i) {
    auto op = static_cast<UpdateOp>(i % 3);
    t.updates.push_back(MakeUpdate(op, static_cast<Category>(i % kCategoryCount),
                                   "key." + std::to_string(i), values[i], static_cast<int>(i)));
  }
  CallRecord call{42, {"c1", "refund_order", {{"order", "A-1"}, {"cents", 1299}}}, true, "ok"};
  CallRecord bare{3, {"", "lookup", json::object()}, false, ""};

  SECTION("every field and value kind") {
    t.calls = {call, bare};
    DecisionRecord d;
    d.rules = {{"r1", "deny", "no", true, {"a line"}, {}}};
    d.rules[0].reads = {
        {Category::kFact, "k", true, "0a", 3, SourceKind::kToolOutput, "t#c1", "", true},
        {Category::kCondition, "c", false, "", 0, SourceKind::kAgent, "", "", false}};
    DecisionRecord newer = d;
    newer.extra = {{"aa", 1}, {"zz", "x"}};
    t.decisions = {d, DecisionRecord{}, newer};
    t.errors = {DecodeExtractionError(json{{"error", "bad"}, {"at", -1}})};
    const std::string turn = internal::TurnRecordBytes(t);
    CHECK(turn == ViaDom(EncodeTurn(t)));
    // A decision's own bytes (the command ledger keeps them) are those the
    // turn holds, and read back as the record.
    for (const DecisionRecord& x : t.decisions) {
      std::string bytes = "prefix";
      AppendDecisionBytes(x, bytes);
      CHECK(bytes == "prefix" + ViaDom(EncodeDecision(x)));
      CHECK(turn.find(bytes.substr(6)) != std::string::npos);
      auto back = DecodeDecisionBytes(std::string_view(bytes).substr(6));
      REQUIRE(back.has_value());
      CHECK(*back == x);
    }
    CHECK(DecodeDecisionBytes("").error().code() == StatusCode::kCorruption);
    CHECK(DecodeDecisionBytes(ViaDom(json{{"turn", "x"}})).error().message() ==
          "decision: 'turn' has the wrong type");
    std::string trailing;
    AppendDecisionBytes(d, trailing);
    CHECK(DecodeDecisionBytes(trailing + "\x01").error().message() ==
          "decision: not one CBOR data item");
  }
  SECTION("optional arrays absent, and an empty turn") {
    CHECK(internal::TurnRecordBytes(t) == ViaDom(EncodeTurn(t)));
    TurnRecord empty;
    CHECK(internal::TurnRecordBytes(empty) == ViaDom(EncodeTurn(empty)));
    empty.committed_at_ms = -1;
    empty.turn = std::numeric_limits<uint64_t>::max();
    CHECK(internal::TurnRecordBytes(empty) == ViaDom(EncodeTurn(empty)));
  }
  SECTION("decodes back to the same record") {
    t.updates.resize(20);  // without the NaN value, which never compares equal
    t.calls = {call};
    t.errors = {DecodeExtractionError(json{{"e", 1}})};
    std::string bytes = internal::TurnRecordBytes(t);
    auto j = json::from_cbor(bytes, true, false);
    REQUIRE_FALSE(j.is_discarded());
    auto decoded = DecodeTurn(j);
    REQUIRE(decoded.has_value());
    CHECK(decoded.value() == t);
  }
  SECTION("appends to what the buffer already holds") {
    std::string out = "prefix";
    internal::AppendTurnRecordBytes(t, out);
    CHECK(out == "prefix" + ViaDom(EncodeTurn(t)));
  }
}

TEST_CASE("redis records: 0.1-shaped extraction errors keep their bytes and read back typed",
          "[redis]") {
  // What 0.1 wrote: the extractor's tool and user errors (a tool error with an
  // empty call id), the session's unsettled command (with command_key), and
  // whatever Ledger::StageError was given (it took any JSON value).
  const std::vector<json> stored = {
      json::parse(R"({"source":"tool","tool":"lookup","call_id":"","rule":"r.total",)"
                  R"("code":"coercion_failed","message":"not a number"})"),
      json::parse(R"({"source":"user","code":"too_large","message":"big"})"),
      json::parse(R"({"source":"commands","tool":"refund","call_id":"w1",)"
                  R"("code":"command_unsettled","command_key":"k-17","message":"down"})"),
      json::parse(R"({"source":"tool","code":7})"),
      json("free text"),
  };
  TurnRecord t;
  t.turn = 2;
  for (const json& e : stored) t.errors.push_back(DecodeExtractionError(e));
  const std::string bytes = internal::TurnRecordBytes(t);
  CHECK(bytes == ViaDom(EncodeTurn(t)));
  // The bytes 0.1 wrote for this turn: its JSON, members sorted, as CBOR.
  CHECK(bytes ==
        ViaDom(json{{"at", 0}, {"errors", stored}, {"turn", 2}, {"updates", json::array()}}));
  auto j = json::from_cbor(bytes, true, false);
  REQUIRE_FALSE(j.is_discarded());
  auto decoded = DecodeTurn(j);
  REQUIRE(decoded.has_value());
  REQUIRE(decoded->errors.size() == stored.size());
  // Each reads into the typed record and writes back to the same bytes.
  CHECK(decoded->errors == t.errors);
  CHECK(internal::TurnRecordBytes(*decoded) == bytes);
  CHECK(decoded->errors[0].call_id == "");
  CHECK(decoded->errors[2].code == "command_unsettled");
  CHECK(decoded->errors[2].extra == json{{"command_key", "k-17"}});
  CHECK(decoded->errors[3].extra == json{{"code", 7}});
  CHECK(decoded->errors[4].extra == "free text");
}

TEST_CASE("redis records: a CborValue holds to_cbor's bytes, decodes to its value, shares them",
          "[redis]") {
  for (const json& v : Values()) {
    const CborValue c = CborValue::Encode(v);
    CHECK(c.bytes() == ViaDom(v));
    const json back = c.Decode();
    if (v.is_number_float() && std::isnan(v.get<double>())) {
      CHECK(std::isnan(back.get<double>()));
    } else {
      CHECK(back == v);
      CHECK(back.dump(-1, ' ', false, json::error_handler_t::replace) ==
            v.dump(-1, ' ', false, json::error_handler_t::replace));
    }
  }
  // A copy shares the one buffer; equality is by bytes.
  const CborValue page = CborValue::Encode(json{{"body", std::string(4000, 'x')}, {"n", 1}});
  const CborValue copy = page;  // NOLINT(performance-unnecessary-copy-initialization)
  CHECK(copy.bytes().data() == page.bytes().data());
  CHECK(copy == CborValue::Encode(json{{"n", 1}, {"body", std::string(4000, 'x')}}));
  CHECK_FALSE(page == CborValue::Encode(json{{"body", std::string(4000, 'x')}, {"n", 2}}));
  // No value is null, as a discarded value is.
  CHECK(CborValue().bytes() == ViaDom(nullptr));
  CHECK(CborValue() == CborValue::Encode(json(json::value_t::discarded)));
  CHECK(CborValue().Decode().is_null());
}

namespace {
SourceRecord Source(SourceRecord::Kind kind, uint64_t turn, std::string tool = "",
                    std::string call_id = "", const json& content = nullptr,
                    std::string refused = "") {
  SourceRecord s;
  s.kind = kind;
  s.turn = turn;
  s.tool = std::move(tool);
  s.call_id = std::move(call_id);
  s.content = CborValue::Encode(content);
  s.refused = std::move(refused);
  return s;
}
}  // namespace

TEST_CASE("redis records: provenance sources are byte-identical to the codec's CBOR and read back",
          "[redis]") {
  TurnRecord t;
  t.turn = 4;
  t.committed_at_ms = 1'700'000'000'123;
  using Kind = SourceRecord::Kind;
  const SourceRecord user =
      Source(Kind::kUserMessage, 3, "", "", "summarise www.informations.com \xc3\xa9");
  const SourceRecord tool =
      Source(Kind::kToolOutput, 4, "read_channel_messages", "c.1/\xe2\x82\xac",
             json::parse(R"([{"sender":"bob","body":"see https://x.example/a"}, 1.5, null])"));
  const SourceRecord text = Source(Kind::kToolOutput, 4, "get_webpage", "c2", "plain text output");
  const SourceRecord refused = Source(Kind::kToolOutput, 4, "get_webpage", "c3", nullptr,
                                      "get_webpage(c3): output over 2097152 bytes of text");
  const SourceRecord refused_user =
      Source(Kind::kUserMessage, 4, "", "", nullptr, "user message over 2097152 bytes");
  t.sources = {user, tool, text, refused, refused_user};
  const std::string bytes = internal::TurnRecordBytes(t);
  CHECK(bytes == ViaDom(EncodeTurn(t)));
  auto j = json::from_cbor(bytes, true, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j["sources"][3].contains("output") == false);  // a refusal keeps no text
  auto decoded = DecodeTurn(j);
  REQUIRE(decoded.has_value());
  CHECK(*decoded == t);
  // A turn without sources has no "sources" member: the bytes of before.
  t.sources.clear();
  CHECK_FALSE(json::from_cbor(internal::TurnRecordBytes(t)).contains("sources"));
  // Malformed sources are Corruption, not a crash or a silent drop.
  for (const char* bad :
       {R"({"kind":"robot","turn":1})", R"({"kind":"user","turn":1})",
        R"({"kind":"user","text":7,"turn":1})", R"({"kind":"tool","tool":"t","turn":1})",
        R"({"kind":"tool","tool":"t","id":"c","turn":1})", R"("text")"}) {
    json turn = {{"turn", 1}, {"updates", json::array()}, {"sources", {json::parse(bad)}}};
    auto r = DecodeTurn(turn);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kCorruption);
  }
}

TEST_CASE("redis records: states are byte-identical to the codec's CBOR", "[redis]") {
  const auto values = Values();
  LedgerState s;
  CHECK(internal::StateRecordBytes(s) == ViaDom(EncodeState(s)));

  s.version = 300;
  for (size_t i = 0; i < values.size(); ++i) {
    Entry e;
    e.value = values[i];
    Update u = MakeUpdate(UpdateOp::kSet, Category::kFact, "", nullptr, static_cast<int>(i));
    e.provenance = u.provenance;
    if (i % 2 == 0) e.expires_at_turn = 301 + i;
    if (i % 3 == 0) e.expires_at_ms = i % 2 ? -7 : 1'700'000'000'000;
    // Keys whose byte order differs from a naive one: upper case, UTF-8, "a" < "a.b" < "ab".
    std::string key = i % 4 == 0 ? "a" : i % 4 == 1 ? "a.b" : i % 4 == 2 ? "Ab" : "\xc3\xa9";
    s.of(static_cast<Category>(i % kCategoryCount)).emplace(key + std::to_string(i), e);
  }
  s.calls = {CallRecord{1, {"c1", "lookup", {{"q", 1}}}, false, "ok"},
             CallRecord{2, {"c2", "refund", json::array()}, true, "denied"}};
  CHECK(internal::StateRecordBytes(s) == ViaDom(EncodeState(s)));

  for (EntryMap& entries : s.entries) {
    // Walks a copy (EntryMaps are persistent values) while setting in the original.
    for (const auto& [key, entry] : EntryMap(entries)) {
      // NaN never compares equal, and tagged binary needs a tag handler to decode.
      if ((entry.value.is_number_float() && std::isnan(entry.value.get<double>())) ||
          entry.value.is_binary()) {
        Entry fixed = entry;
        fixed.value = 0;
        entries[key] = std::move(fixed);
      }
    }
  }
  auto decoded = DecodeState(json::from_cbor(internal::StateRecordBytes(s)));
  REQUIRE(decoded.has_value());
  CHECK(decoded.value() == s);
}

TEST_CASE("redis records: a snapshot reusing the last one's encoded calls writes the same bytes",
          "[redis]") {
  const auto values = Values();
  internal::CallBytesCache cache;
  auto cached = [&](const LedgerState& state) {
    std::string out;
    internal::AppendStateRecordBytes(state, out, &cache);
    return out;
  };
  LedgerState s;
  CHECK(cached(s) == ViaDom(EncodeState(s)));
  // A conversation's calls growing between snapshots, every kind of argument.
  for (size_t i = 0; i < values.size(); ++i) {
    s.version = i + 1;
    s.calls.push_back(CallRecord{
        i + 1, {"c" + std::to_string(i), "ship", {{"v", values[i]}, {"n", i}}}, i % 2 == 0, "ok"});
    if (i % 3 == 0) s.calls.push_back(CallRecord{i + 1, {"d", "look", json::array()}, false, "ok"});
    INFO("call " << i);
    CHECK(cached(s) == internal::StateRecordBytes(s));
  }
  CHECK(cached(s) == ViaDom(EncodeState(s)));
  // Another conversation (no common record), an older version of the first
  // (a prefix of what was remembered), the first again, and no calls at all.
  LedgerState other;
  other.calls = {CallRecord{1, {"x", "refund", {{"amount", 3}}}, true, "denied"}};
  CHECK(cached(other) == ViaDom(EncodeState(other)));
  LedgerState older;
  older.calls = s.calls;
  CHECK(cached(s) == ViaDom(EncodeState(s)));
  for (int i = 0; i < 3; ++i)
    s.calls.push_back(CallRecord{9, {"e", "ship", {{"i", i}}}, true, "ok"});
  CHECK(cached(older) == ViaDom(EncodeState(older)));
  CHECK(cached(s) == ViaDom(EncodeState(s)));
  CHECK(cached(LedgerState{}) == ViaDom(EncodeState(LedgerState{})));
  CHECK(cached(s) == ViaDom(EncodeState(s)));
}
