// SharedString (taskledger/base/shared_string.h): the text round-trips, copies
// share one block, and the promised thread safety holds: copies of one
// SharedString read, copied and destroyed on several threads at once leave the
// text intact and free the block exactly once (ThreadSanitizer and
// AddressSanitizer builds run this; label `threads`).
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "taskledger/base/shared_string.h"

using taskledger::SharedString;

TEST_CASE("shared string: holds its text, copies share one block, empty holds none", "[base]") {
  SharedString a(std::string("rule.grounded@v3"));
  SharedString b = a;
  CHECK(b == "rule.grounded@v3");
  CHECK(b.data() == a.data());  // one block, not a copy of the text
  CHECK(b.size() == 16);
  a = "other";
  CHECK(b == "rule.grounded@v3");
  CHECK(a == "other");
  SharedString empty;
  CHECK(empty.empty());
  CHECK(std::string(empty.c_str()).empty());
}

TEST_CASE("shared string: copies of one string used on several threads at once",
          "[base][threads]") {
  const std::string text(64, 'x');
  std::vector<SharedString> originals;
  originals.reserve(8);
  for (int i = 0; i < 8; ++i) originals.emplace_back(text + std::to_string(i));
  constexpr int kThreads = 4;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2000; ++round) {
        const SharedString& source = originals[(round + t) % originals.size()];
        SharedString copy = source;                // refcount up on a shared block
        SharedString moved = std::move(copy);      // no refcount change
        std::vector<SharedString> more(3, moved);  // three more increments
        if (moved.view() != source.view() || more.back() != source) ++mismatches[t];
        // `moved` and `more` are destroyed here: decrements racing other threads'.
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(mismatches[t] == 0);
  for (size_t i = 0; i < originals.size(); ++i) CHECK(originals[i] == text + std::to_string(i));
}
