// The Store contract (taskledger/ledger/store.h), run against MemoryStore and
// RedisStore alike: exact read-back of every version, optimistic concurrency,
// monotonic versions, diffs, expiry, snapshot cadence, listing, dropping,
// tenant isolation with hostile ids, retention, batched commits, and turns
// holding 0.1-shaped extraction errors.
#include <catch2/catch.hpp>

#include "ledger/store_backends.h"
#include "taskledger/ledger/extraction_error.h"

using namespace taskledger;
using namespace taskledger::testing;
using namespace std::chrono_literals;

// The cluster build of this file (ctest label `cluster`) runs every case on
// a 3-primary Redis Cluster instead.
#ifdef TASKLEDGER_CLUSTER_TESTS
#define TL_STORE_BACKENDS ClusterBackend
#elif defined(TASKLEDGER_TLS_TESTS)
#define TL_STORE_BACKENDS TlsBackend
#else
#define TL_STORE_BACKENDS MemoryBackend, RedisBackend
#endif

namespace {
constexpr int64_t kT0 = 1'700'000'000'000;
}

TEMPLATE_TEST_CASE("store: every committed version and turn reads back exactly", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open(StoreOpts(4));
  auto id = backend.Id("acme", "c1");
  std::vector<LedgerState> versions(1);  // version 0: empty
  std::vector<TurnRecord> turns;
  LedgerState head;
  for (int i = 1; i <= 30; ++i) {
    std::vector<Update> updates = {
        SetUpdate(Category::kFact, "k" + std::to_string(i % 7), i),
        SetUpdate(Category::kIdentifier, "order", "#W" + std::to_string(i))};
    if (i % 5 == 0) updates.push_back(RemoveUpdate(Category::kFact, "k1"));
    TurnRecord turn;
    REQUIRE(CommitNext(*store, id, head, updates, kT0 + i, &turn).ok());
    versions.push_back(head);
    turns.push_back(turn);
  }
  REQUIRE(store->Head(id).value() == 30);
  for (uint64_t v = 0; v <= 30; ++v) {
    auto read = store->ReadVersion(id, v);
    REQUIRE(read.has_value());
    CHECK(read.value() == versions[v]);
  }
  CHECK(store->ReadHead(id).value() == versions[30]);
  auto all = store->ReadTurns(id, 1, 30);
  REQUIRE(all.has_value());
  CHECK(all.value() == turns);
  CHECK(store->ReadTurns(id, 7, 9).value() ==
        std::vector<TurnRecord>(turns.begin() + 6, turns.begin() + 9));
  CHECK(store->ReadVersion(id, 31).error().code() == StatusCode::kNotFound);
  CHECK(store->ReadTurns(id, 1, 31).error().code() == StatusCode::kNotFound);
}

TEMPLATE_TEST_CASE("store: a stale base is a conflict and overwrites nothing", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open();
  auto id = backend.Id("acme", "race");
  LedgerState writer_a, writer_b;
  REQUIRE(CommitNext(*store, id, writer_a, {SetUpdate(Category::kFact, "owner", "a")}, kT0).ok());
  Status lost = CommitNext(*store, id, writer_b, {SetUpdate(Category::kFact, "owner", "b")}, kT0);
  CHECK(lost.code() == StatusCode::kConflict);
  CHECK(store->Head(id).value() == 1);
  CHECK(store->ReadVersion(id, 1).value().of(Category::kFact).at("owner").value == "a");

  // Versions only go up: a gap or a re-commit of an old version is refused.
  REQUIRE(CommitNext(*store, id, writer_a, {SetUpdate(Category::kFact, "owner", "a2")}, kT0).ok());
  LedgerState ahead = writer_a;
  ahead.version = 5;
  CHECK(CommitNext(*store, id, ahead, {}, kT0).code() == StatusCode::kConflict);
  LedgerState behind = store->ReadVersion(id, 1).value();
  CHECK(CommitNext(*store, id, behind, {SetUpdate(Category::kFact, "owner", "old")}, kT0).code() ==
        StatusCode::kConflict);
  CHECK(store->Head(id).value() == 2);
  CHECK(store->ReadHead(id).value().of(Category::kFact).at("owner").value == "a2");
}

TEMPLATE_TEST_CASE("store: a commit whose state does not carry its version is rejected", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open();
  auto id = backend.Id("acme", "bad");
  TurnRecord turn;
  turn.turn = 1;
  LedgerState wrong;  // version 0, not 1
  CHECK(store->CommitTurn(id, turn, wrong).code() == StatusCode::kInvalidArgument);
  CHECK(store->Head(id).value() == 0);
}

TEMPLATE_TEST_CASE("store: diff of two stored versions", "[store]", TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open();
  auto id = backend.Id("acme", "diff");
  LedgerState head;
  REQUIRE(CommitNext(*store, id, head,
                     {SetUpdate(Category::kFact, "status", "pending"),
                      SetUpdate(Category::kFact, "gone", 1)},
                     kT0)
              .ok());
  REQUIRE(CommitNext(*store, id, head,
                     {SetUpdate(Category::kFact, "status", "delivered"),
                      RemoveUpdate(Category::kFact, "gone"),
                      SetUpdate(Category::kIdentifier, "order", "#W1")},
                     kT0)
              .ok());
  StateDiff d = Diff(store->ReadVersion(id, 1).value(), store->ReadVersion(id, 2).value(), kT0);
  REQUIRE(d.added.size() == 1);
  CHECK(d.added[0].key == "order");
  REQUIRE(d.changed.size() == 1);
  CHECK(d.changed[0].after->value == "delivered");
  REQUIRE(d.removed.size() == 1);
  CHECK(d.removed[0].key == "gone");
}

TEMPLATE_TEST_CASE("store: entries expire by turns and by wall clock, history keeps them",
                   "[store]", TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open(StoreOpts(2));
  auto id = backend.Id("acme", "expiry");
  LedgerState head;
  Update short_lived = SetUpdate(Category::kCondition, "confirmed", true);
  short_lived.expire_after_turns = 2;
  Update timed = SetUpdate(Category::kConstraint, "quote", 42);
  timed.expire_at_ms = kT0 + 1000;
  REQUIRE(CommitNext(*store, id, head, {short_lived, timed}, kT0).ok());
  REQUIRE(CommitNext(*store, id, head, {}, kT0 + 500).ok());
  REQUIRE(CommitNext(*store, id, head, {}, kT0 + 1500).ok());
  auto v2 = store->ReadVersion(id, 2).value();
  CHECK(v2.of(Category::kCondition).count("confirmed") == 1);
  CHECK(v2.of(Category::kConstraint).count("quote") == 1);
  auto v3 = store->ReadVersion(id, 3).value();
  CHECK(v3.of(Category::kCondition).count("confirmed") == 0);
  CHECK(v3.of(Category::kConstraint).count("quote") == 0);
  CHECK(v3 == head);
  CHECK(store->ReadVersion(id, 1).value().of(Category::kConstraint).count("quote") == 1);
}

TEMPLATE_TEST_CASE("store: reading version N after many turns with snapshots", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  for (uint32_t every : {1u, 5u, 64u}) {
    auto store = backend.Open(StoreOpts(every));
    auto id = backend.Id("acme", "snap" + std::to_string(every));
    std::vector<LedgerState> versions(1);  // version 0: empty
    LedgerState head;
    for (int i = 1; i <= 23; ++i) {
      REQUIRE(CommitNext(*store, id, head,
                         {SetUpdate(Category::kFact, "n", i),
                          SetUpdate(Category::kFact, "k" + std::to_string(i), i)},
                         kT0 + i)
                  .ok());
      versions.push_back(head);
    }
    for (uint64_t v : {0u, 1u, 4u, 5u, 6u, 10u, 11u, 19u, 20u, 22u, 23u}) {
      INFO("snapshot_every=" << every << " version=" << v);
      CHECK(store->ReadVersion(id, v).value() == versions[v]);
    }
  }
}

TEMPLATE_TEST_CASE("store: conversations are listed per tenant, sorted, and dropped", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open();
  for (std::string c : {"c3", "c1", "c2"}) {
    LedgerState head;
    REQUIRE(
        CommitNext(*store, backend.Id("acme", c), head, {SetUpdate(Category::kFact, "x", c)}, kT0)
            .ok());
  }
  LedgerState other;
  REQUIRE(CommitNext(*store, backend.Id("globex", "c9"), other, {}, kT0).ok());
  CHECK(store->ListConversations(backend.Tenant("acme")).value() ==
        std::vector<std::string>{"c1", "c2", "c3"});
  CHECK(store->ListConversations(backend.Tenant("globex")).value() ==
        std::vector<std::string>{"c9"});
  CHECK(store->ListConversations(backend.Tenant("nobody")).value().empty());

  REQUIRE(store->DropConversation(backend.Id("acme", "c2")).ok());
  CHECK(store->ListConversations(backend.Tenant("acme")).value() ==
        std::vector<std::string>{"c1", "c3"});
  CHECK(store->Head(backend.Id("acme", "c2")).value() == 0);
  CHECK(store->ReadVersion(backend.Id("acme", "c2"), 1).error().code() == StatusCode::kNotFound);
  LedgerState fresh;  // a dropped conversation starts again from version 0
  CHECK(CommitNext(*store, backend.Id("acme", "c2"), fresh, {}, kT0).ok());
}

TEMPLATE_TEST_CASE("store: crafted tenant and conversation ids stay in their own namespace",
                   "[store]", TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open();
  // Pairs that collide under a naive "tenant:conversation" join, hash-tag
  // breakers, glob characters and control bytes.
  std::vector<std::pair<std::string, std::string>> ids = {
      {"a", "b:c"}, {"a:b", "c"},  {"a}:x", "y"},       {"a", "}:x"},  {"{", "*"},
      {"*", "{"},   {"a\nb", "c"}, {"a", "b\nc"},       {"a%3A", "b"}, {":", ":"},
      {"a", "*"},   {"a?", "[x]"}, {"", "empty-tenant"}};
  for (size_t i = 0; i < ids.size(); ++i) {
    LedgerState head;
    auto id = backend.Id(ids[i].first, ids[i].second);
    REQUIRE(
        CommitNext(*store, id, head, {SetUpdate(Category::kFact, "who", static_cast<int>(i))}, kT0)
            .ok());
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    INFO("tenant='" << ids[i].first << "' conversation='" << ids[i].second << "'");
    auto id = backend.Id(ids[i].first, ids[i].second);
    CHECK(store->Head(id).value() == 1);
    CHECK(store->ReadHead(id).value().of(Category::kFact).at("who").value == static_cast<int>(i));
  }
  CHECK(store->ListConversations(backend.Tenant("a")).value() ==
        std::vector<std::string>{"*", "b\nc", "b:c", "}:x"});
  CHECK(store->ListConversations(backend.Tenant("*")).value() == std::vector<std::string>{"{"});
  CHECK(store->ListConversations(backend.Tenant("a?")).value() == std::vector<std::string>{"[x]"});
  CHECK(store->ListConversations(backend.Tenant("a}")).value().empty());
  REQUIRE(store->DropConversation(backend.Id("a", "*")).ok());
  CHECK(store->Head(backend.Id("a", "b:c")).value() == 1);
  CHECK(store->Head(backend.Id("{", "*")).value() == 1);
}

TEMPLATE_TEST_CASE("store: retention removes a whole idle conversation", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open(StoreOpts(2, std::chrono::seconds(1)));
  auto id = backend.Id("acme", "short");
  LedgerState head;
  for (int i = 0; i < 3; ++i)
    REQUIRE(CommitNext(*store, id, head, {SetUpdate(Category::kFact, "i", i)}, kT0).ok());
  backend.PassTime(600ms);
  REQUIRE(CommitNext(*store, id, head, {}, kT0).ok());  // a commit restarts the period
  backend.PassTime(600ms);
  CHECK(store->Head(id).value() == 4);
  CHECK(store->ReadVersion(id, 2).value().of(Category::kFact).at("i").value == 1);
  backend.PassTime(700ms);
  CHECK(store->Head(id).value() == 0);
  CHECK(store->ReadVersion(id, 1).error().code() == StatusCode::kNotFound);
  CHECK(store->ListConversations(backend.Tenant("acme")).value().empty());
}

TEMPLATE_TEST_CASE("store: a batch commits many conversations, each with its own status", "[store]",
                   TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open(StoreOpts(3));
  constexpr int kConversations = 50;
  std::vector<ConversationId> ids;
  ids.reserve(kConversations);
  std::vector<LedgerState> heads(kConversations);
  for (int i = 0; i < kConversations; ++i)
    ids.push_back(backend.Id("batch", "c" + std::to_string(i)));
  // Conversation 7 already moved on: its request in the batch is stale.
  REQUIRE(CommitNext(*store, ids[7], heads[7], {}, kT0).ok());
  LedgerState stale;
  std::vector<TurnRecord> turns(kConversations);
  std::vector<LedgerState> afters(kConversations);
  std::vector<CommitRequest> batch;
  for (int i = 0; i < kConversations; ++i) {
    const LedgerState& base = i == 7 ? stale : heads[i];
    turns[i].turn = base.version + 1;
    turns[i].committed_at_ms = kT0;
    turns[i].updates = {SetUpdate(Category::kFact, "i", i)};
    afters[i] = base;
    REQUIRE(ApplyTurn(afters[i], turns[i]).ok());
    batch.push_back({ids[i], &turns[i], &afters[i]});
  }
  std::vector<Status> results = store->CommitTurns(batch);
  REQUIRE(results.size() == kConversations);
  for (int i = 0; i < kConversations; ++i) {
    INFO("conversation " << i);
    if (i == 7) {
      CHECK(results[i].code() == StatusCode::kConflict);
      CHECK(store->ReadHead(ids[i]).value() == heads[7]);
    } else {
      CHECK(results[i].ok());
      CHECK(store->ReadHead(ids[i]).value() == afters[i]);
    }
  }
}

TEMPLATE_TEST_CASE("store: 0.1-shaped extraction errors read back and into typed records",
                   "[store]", TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open(StoreOpts(4));
  auto id = backend.Id("acme", "errors");
  // What 0.1 kept in a turn's errors: the extractor's records, the session's
  // (with command_key), and any JSON value Ledger::StageError was given.
  const std::vector<nlohmann::json> stored = {
      {{"source", "tool"},
       {"tool", "lookup"},
       {"call_id", "c1"},
       {"code", "too_deep"},
       {"message", "deeper than 64"}},
      {{"source", "user"}, {"rule", "email"}, {"code", "missing"}, {"message", "no email"}},
      {{"source", "commands"}, {"code", "command_unsettled"}, {"command_key", "k-9"}},
      "free text"};
  TurnRecord turn;
  turn.turn = 1;
  turn.committed_at_ms = kT0;
  for (const nlohmann::json& e : stored) turn.errors.push_back(DecodeExtractionError(e));
  LedgerState after;
  after.version = 1;
  REQUIRE(store->CommitTurn(id, turn, after).ok());
  auto read = store->ReadTurns(id, 1, 1);
  REQUIRE(read.has_value());
  REQUIRE(read->size() == 1);
  REQUIRE(read->front().errors == turn.errors);
  // Each reads back as the record 0.1 stored.
  REQUIRE(read->front().errors.size() == stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    CHECK(EncodeExtractionError(read->front().errors[i]) == stored[i]);
  }
  CHECK(read->front().errors[0].call_id == "c1");
  CHECK(read->front().errors[2].code == "command_unsettled");
  CHECK(read->front().errors[2].extra == nlohmann::json{{"command_key", "k-9"}});
  CHECK(read->front().errors[3].extra == "free text");
}

TEMPLATE_TEST_CASE("store: a turn's provenance sources read back exactly, beside turns without",
                   "[store]", TL_STORE_BACKENDS) {
  TestType backend;
  auto store = backend.Open(StoreOpts(2));
  auto id = backend.Id("acme", "sources");
  LedgerState head;
  std::vector<TurnRecord> turns;
  for (uint64_t v = 1; v <= 5; ++v) {
    TurnRecord turn;
    turn.turn = v;
    turn.committed_at_ms = kT0 + static_cast<int64_t>(v);
    if (v % 2 == 1) {  // turns 2 and 4 hold none, as every turn written before sources
      SourceRecord user;
      user.kind = SourceRecord::Kind::kUserMessage;
      user.turn = v;
      user.content =
          CborValue::Encode(nlohmann::json("message " + std::to_string(v) + " to bob@example.com"));
      SourceRecord tool;
      tool.turn = v;
      tool.tool = "get_webpage";
      tool.call_id = "c" + std::to_string(v);
      tool.content = CborValue::Encode({{"text", "page " + std::to_string(v)}, {"n", v}});
      turn.sources = {user, tool};
    }
    LedgerState after = head;
    REQUIRE(ApplyTurn(after, turn).ok());
    REQUIRE(store->CommitTurn(id, turn, after).ok());
    head = after;
    turns.push_back(turn);
  }
  auto read = store->ReadTurns(id, 1, 5);
  REQUIRE(read.has_value());
  CHECK(*read == turns);
  CHECK((*read)[0].sources.size() == 2);
  CHECK((*read)[1].sources.empty());
  // Sources are no part of the state.
  CHECK(store->ReadHead(id).value() == head);
}
