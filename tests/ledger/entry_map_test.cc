// The persistent state parts (taskledger/ledger/entry_map.h, call_list.h):
// random operations agree with std::map, old versions never change, Diff
// of states sharing nodes equals the Diff of unshared copies, and versions
// share what they did not change.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "taskledger/ledger/state.h"

using namespace taskledger;

namespace {

Entry Make(int v, std::optional<uint64_t> expires_at_turn = std::nullopt) {
  Entry e;
  e.value = v;
  e.provenance.source = SourceKind::kToolOutput;
  e.expires_at_turn = expires_at_turn;
  return e;
}

std::map<std::string, Entry> ToStd(const EntryMap& m) {
  std::map<std::string, Entry> out;
  for (const auto& [k, e] : m) out.emplace(k, e);
  return out;
}

// The same map built without sharing any node with `m`.
EntryMap Unshared(const EntryMap& m) {
  EntryMap out;
  for (const auto& [k, e] : m) out.emplace(k, e);
  return out;
}

bool SameChanges(const std::vector<EntryChange>& a, const std::vector<EntryChange>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].category != b[i].category || a[i].key != b[i].key || a[i].before != b[i].before ||
        a[i].after != b[i].after) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("entry map: random sets and erases agree with std::map; old versions stay", "[ledger]") {
  std::mt19937 rng(7);
  EntryMap m;
  std::map<std::string, Entry> ref;
  std::vector<std::pair<EntryMap, std::map<std::string, Entry>>> versions;
  for (int i = 0; i < 4000; ++i) {
    std::string key = "k" + std::to_string(rng() % 500);
    if (rng() % 3 == 0) {
      CHECK(m.erase(key) == ref.erase(key));
    } else {
      m[key] = Make(i);
      ref[key] = Make(i);
    }
    if (i % 97 == 0) versions.emplace_back(m, ref);
  }
  CHECK(m.size() == ref.size());
  CHECK(ToStd(m) == ref);
  for (const auto& [old, old_ref] : versions) CHECK(ToStd(old) == old_ref);
  // lower_bound / find / get as std::map.
  for (const std::string key : {"k1", "k10", "k250", "k499", "k5", "a", "z"}) {
    auto it = m.lower_bound(key);
    auto rit = ref.lower_bound(key);
    CHECK((it == m.end()) == (rit == ref.end()));
    if (rit != ref.end()) CHECK(it->first == rit->first);
    CHECK((m.get(key) != nullptr) == ref.contains(key));
    CHECK((m.find(key) == m.end()) == !ref.contains(key));
  }
}

TEST_CASE("entry map: expired entries are erased, others kept", "[ledger]") {
  EntryMap m;
  for (int i = 0; i < 300; ++i) m[std::to_string(i)] = Make(i, i % 10 == 0 ? 5 + i % 3 : 1000);
  CHECK(m.min_expires_at_turn() == 5);
  m.EraseExpired(6, 0);
  for (int i = 0; i < 300; ++i) {
    bool gone = i % 10 == 0 && 5 + i % 3 <= 6;
    CHECK((m.get(std::to_string(i)) == nullptr) == gone);
  }
}

TEST_CASE("entry map: updates in place on unshared paths keep expiry minima and old versions",
          "[ledger]") {
  // Runs of sets with no copy between them (as within a turn: the path the
  // first set copied is updated in place by the next), copies taken between
  // runs, replaced keys and new ones, expiries that move the subtree minima.
  std::mt19937 rng(11);
  EntryMap m;
  std::map<std::string, Entry> ref;
  std::vector<std::pair<EntryMap, std::map<std::string, Entry>>> versions;
  for (int run = 0; run < 200; ++run) {
    const int sets = 1 + static_cast<int>(rng() % 16);
    for (int i = 0; i < sets; ++i) {
      std::string key = "order." + std::to_string(rng() % 300) + ".f" + std::to_string(rng() % 4);
      Entry e = Make(run * 100 + i, 1 + rng() % 500);
      m[key] = e;
      ref[key] = e;
    }
    if (run % 3 == 0) versions.emplace_back(m, ref);
  }
  CHECK(ToStd(m) == ref);
  uint64_t min_turn = UINT64_MAX;
  for (const auto& [k, e] : ref) min_turn = std::min(min_turn, *e.expires_at_turn);
  CHECK(m.min_expires_at_turn() == min_turn);
  m.EraseExpired(250, 0);
  std::erase_if(ref, [](const auto& kv) { return *kv.second.expires_at_turn <= 250; });
  CHECK(ToStd(m) == ref);
  for (const auto& [old, old_ref] : versions) CHECK(ToStd(old) == old_ref);
}

TEST_CASE("state diff: shared versions diff as unshared copies do", "[ledger]") {
  std::mt19937 rng(11);
  LedgerState s;
  for (int i = 0; i < 2000; ++i)
    s.of(Category::kFact)["f" + std::to_string(i)] = Make(i, 40 + i % 50);
  s.version = 1;
  for (int v = 2; v < 60; ++v) {
    LedgerState next = s;
    next.version = static_cast<uint64_t>(v);
    for (int k = 0; k < 5; ++k) {
      std::string key = "f" + std::to_string(rng() % 2500);
      if (rng() % 4 == 0) {
        next.of(Category::kFact).erase(key);
      } else {
        next.of(Category::kFact)[key] =
            Make(v, rng() % 2 ? std::optional<uint64_t>(v + 30) : std::nullopt);
      }
    }
    LedgerState a = s, b = next;
    for (EntryMap& m : a.entries) m = Unshared(m);
    for (EntryMap& m : b.entries) m = Unshared(m);
    for (int64_t now : {0, 1}) {
      StateDiff shared = Diff(s, next, now);
      StateDiff plain = Diff(a, b, now);
      CHECK(SameChanges(shared.added, plain.added));
      CHECK(SameChanges(shared.changed, plain.changed));
      CHECK(SameChanges(shared.removed, plain.removed));
      // Across many versions too (turn expiries in between).
      StateDiff wide = Diff(s, b, now);
      CHECK(SameChanges(wide.added, plain.added));
    }
    s = next;
  }
}

TEST_CASE("call list: appends share earlier records; reads in order", "[ledger]") {
  CallList a;
  for (int i = 0; i < 5; ++i)
    a.push_back(CallRecord{1, {"c" + std::to_string(i), "t", {}}, false, "ok"});
  CallList b = a;
  b.push_back(CallRecord{2, {"c5", "t", {}}, false, "ok"});
  CHECK(a.size() == 5);
  CHECK(b.size() == 6);
  CHECK(b.back().call.id == "c5");
  CHECK(b[0].call.id == "c0");
  CHECK(a[4].call.id == "c4");
  std::vector<std::string> ids;
  for (const CallRecord& c : b) ids.push_back(c.call.id);
  CHECK(ids == std::vector<std::string>{"c0", "c1", "c2", "c3", "c4", "c5"});
  CHECK(CallList(b.ToVector()) == b);
  CHECK_FALSE(a == b);
}
