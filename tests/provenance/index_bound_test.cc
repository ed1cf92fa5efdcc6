// The lazy index's bound of what a queued output can add. A long conversation
// whose rules never ask provenance keeps its outputs queued (about their text
// each) instead of walking them because the bound said the index might fill;
// and the bound stays an upper bound: the Add that takes the index past a
// limit is refused itself, with the error an index walking every output at
// once gives, and a hostile 10 MB output is refused at its own Add.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "taskledger/provenance/index.h"

namespace taskledger::provenance {
namespace {

// A tau-bench retail order as get_order_details returns it (~1.1 KB of JSON).
nlohmann::json RetailOrder(int n) {
  auto order = nlohmann::json::parse(R"({
    "order_id": "#W2378156", "user_id": "yusuf_rossi_9620", "status": "delivered",
    "address": {"address1": "763 Broadway", "address2": "Suite 135", "city": "Philadelphia",
                "country": "USA", "state": "PA", "zip": "19122"},
    "items": [
      {"name": "Headphones", "product_id": "6992792935", "item_id": "4202497723",
       "price": 342.81,
       "options": {"type": "over-ear", "connectivity": "wireless", "color": "red"}},
      {"name": "Vacuum Cleaner", "product_id": "1762337868", "item_id": "4602305039",
       "price": 561.05,
       "options": {"type": "robotic", "bagged/bagless": "bagged", "features": "cordless"}},
      {"name": "Mechanical Keyboard", "product_id": "1656367028", "item_id": "1151293680",
       "price": 272.33,
       "options": {"switch type": "linear", "backlight": "RGB", "size": "full size"}}],
    "fulfillments": [{"tracking_id": ["843053632392"],
                      "item_ids": ["4202497723", "4602305039", "1151293680"]}],
    "payment_history": [{"transaction_type": "payment", "amount": 1819.92,
                         "payment_method_id": "credit_card_9513926"}],
    "hold": {"reason": "review", "days_remaining": 2}})");
  order["order_id"] = "#W" + std::to_string(1'000'000 + n);
  return order;
}

std::string Hostile10MB() {
  std::string hostile;
  hostile.reserve(10u << 20);
  for (int i = 0; hostile.size() < (10u << 20); ++i) {
    hostile += "u" + std::to_string(i) + "@e.com www.x" + std::to_string(i) + ".com ";
  }
  return hostile;
}

TEST_CASE("index bound: 5,000 retail order outputs stay queued until a question", "[provenance]") {
  constexpr int kOutputs = 5000;
  ProvenanceIndex lazy;
  REQUIRE(lazy.AddUserMessage(1, "where is my order #W1000000? I am yusuf_rossi_9620").ok());
  for (int i = 0; i < kOutputs; ++i) {
    REQUIRE(lazy.AddToolOutput(i + 1, "get_order_details", "c" + std::to_string(i), RetailOrder(i))
                .ok());
  }
  // Nothing walked: every output is still in the queue, at about its text
  // (the order's strings are ~600 bytes; its JSON ~1.1 KB).
  const std::size_t queued = lazy.queued_bytes();
  CHECK(queued > std::size_t{kOutputs} * 600);
  CHECK(queued < std::size_t{kOutputs} * 2048);

  // The first question walks it all and answers as an index walking each
  // output when it arrived.
  ProvenanceIndex eager;
  REQUIRE(eager.AddUserMessage(1, "where is my order #W1000000? I am yusuf_rossi_9620").ok());
  for (int i = 0; i < kOutputs; ++i) {
    REQUIRE(eager.AddToolOutput(i + 1, "get_order_details", "c" + std::to_string(i), RetailOrder(i))
                .ok());
    REQUIRE(eager.source_count() > 0);  // a question after each: walked at once
  }
  CHECK(eager.queued_bytes() < 4096);
  CHECK(lazy.source_count() == eager.source_count());
  CHECK(lazy.queued_bytes() < queued / 10);  // the texts are gone (the queue keeps its slots)
  auto last = lazy.SourcesOf("#W1004999");
  REQUIRE(last.has_value());
  REQUIRE(last.value().size() == 1);
  CHECK(last.value()[0]->call_id == "c4999");
  CHECK(last.value()[0]->pointer == "/order_id");
  auto user = lazy.SourcesOf("yusuf_rossi_9620");
  REQUIRE(user.has_value());
  CHECK(user.value().size() == kOutputs + 1);
}

TEST_CASE("index bound: a hostile 10 MB output after 5,000 queued outputs is refused at its Add",
          "[provenance]") {
  ProvenanceIndex index;
  for (int i = 0; i < 5000; ++i) {
    REQUIRE(index.AddToolOutput(i + 1, "get_order_details", "c" + std::to_string(i), RetailOrder(i))
                .ok());
  }
  const Status s = index.AddToolOutput(5001, "get_webpage", "h1", Hostile10MB());
  CHECK(s.code() == StatusCode::kLimitExceeded);
  CHECK_THAT(s.message(), Catch::Contains("get_webpage(h1)") && Catch::Contains("output over"));
  auto r = index.SourcesOf("#W1000000");
  REQUIRE_FALSE(r.has_value());  // incomplete: no answer at all, not "seen nowhere"
  CHECK(r.error().code() == StatusCode::kLimitExceeded);
  CHECK(index.AddUserMessage(5002, "hi").code() == StatusCode::kLimitExceeded);
}

// Text dense in places a token can start: '$' after a word, currency signs,
// floats, accounts, URLs and e-mail addresses, next to each other.
std::string DenseText(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "a$1",         "$2$3",          " \u20AC5",
      " \u00A36",    "\u00A57 ",      " 1.5e+20",
      " 9",          "x1 y2 z3",      " DE89 3704 0044 0532 0130 00",
      " a@b.io",     " www.x.com/p ", ",7,8",
      "12345678901", " 3 usd",        "-4.25",
      " ok"};
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(1, 12);
  std::string text;
  for (int k = length(rng); k > 0; --k) text += pieces[piece(rng)];
  return text;
}

// Items whose bound is close to what they add: numbers, booleans, money and
// currency signs, digit runs, and dense mixed text.
std::vector<nlohmann::json> NarrowItems(std::mt19937& rng) {
  std::vector<nlohmann::json> items = {
      nlohmann::json::parse("[1.5e+20, -4.25, 1e-7, -0.0, 3.0]"),
      nlohmann::json::parse("[-42, 7, 18446744073709551615, -9223372036854775807]"),
      nlohmann::json::parse("[true, false, true]"),
      "12 34 56 78 90",
      "$1 $2 $3a$4",
      "\u20AC5 \u00A36 \u00A57",
      "5 usd 6 EUR 7 gbp",
      "DE89 3704 0044 0532 0130 00 12345678901",
      nlohmann::json{{"a", "1"}, {"b", "2"}, {"c", {"3", "4", 5}}}};
  for (int i = 0; i < 40; ++i) items.emplace_back(DenseText(rng));
  return items;
}

TEST_CASE("index bound: one output or message alone is refused exactly when its walk would be",
          "[provenance]") {
  // A fresh index with room for `max` sources: the Add queues only if the
  // output's bound fits, so a bound below what the walk adds would let an
  // Add pass that an eager index refuses.
  std::mt19937 rng(20261126);
  for (const nlohmann::json& item : NarrowItems(rng)) {
    ProvenanceIndex full;
    REQUIRE(full.AddToolOutput(1, "t", "c", item).ok());
    const std::size_t walked = full.source_count();
    const bool text = item.is_string();
    ProvenanceIndex full_message;
    if (text) REQUIRE(full_message.AddUserMessage(1, item.get_ref<const std::string&>()).ok());
    const std::size_t walked_message = text ? full_message.source_count() : 0;
    for (std::size_t max = 1; max <= std::max(walked, walked_message) + 1; ++max) {
      INFO(item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << " max " << max);
      IndexLimits limits;
      limits.max_sources = max;
      ProvenanceIndex output({}, limits);
      CHECK(output.AddToolOutput(1, "t", "c", item).ok() == (walked <= max));
      if (text) {
        ProvenanceIndex message({}, limits);
        CHECK(message.AddUserMessage(1, item.get_ref<const std::string&>()).ok() ==
              (walked_message <= max));
      }
    }
  }
}

TEST_CASE("index bound: the Add that passes the source limit is the one an eager walk refuses",
          "[provenance]") {
  // For every limit from 20 to 400 sources, the same conversation is fed to an
  // index nobody asks (it queues, with the tight bound once the cheap one no
  // longer fits) and to one asked after every Add (it walks at once). If the
  // bound ever undercounted an output, the queueing index would accept the
  // Add whose walk passes the limit.
  std::mt19937 rng(20261125);
  struct Item {
    bool message = false;
    nlohmann::json value;
  };
  std::vector<Item> items;
  for (int i = 0; i < 200; ++i) {
    if (i % 7 == 0) {
      items.push_back({true, DenseText(rng)});
    } else {
      items.push_back({false, nlohmann::json{{"t", DenseText(rng)},
                                             {"n", i * 7},
                                             {"f", 0.125 * i - 100.5},
                                             {"b", i % 2 == 0},
                                             {"l", {DenseText(rng), DenseText(rng)}}}});
    }
  }
  auto add = [&](ProvenanceIndex& index, std::size_t i) {
    const Item& item = items[i];
    if (item.message) {
      return index.AddUserMessage(static_cast<std::int64_t>(i),
                                  item.value.get_ref<const std::string&>());
    }
    return index.AddToolOutput(static_cast<std::int64_t>(i), "get_webpage", "c" + std::to_string(i),
                               item.value);
  };
  for (std::size_t max = 20; max <= 400; ++max) {
    IndexLimits limits;
    limits.max_sources = max;
    ProvenanceIndex lazy({}, limits);
    ProvenanceIndex eager({}, limits);
    std::size_t lazy_fail = items.size();
    std::size_t eager_fail = items.size();
    Status lazy_error;
    Status eager_error;
    for (std::size_t i = 0; i < items.size() && lazy_fail == items.size(); ++i) {
      if (Status s = add(lazy, i); !s.ok()) {
        lazy_fail = i;
        lazy_error = s;
      }
    }
    for (std::size_t i = 0; i < items.size() && eager_fail == items.size(); ++i) {
      Status s = add(eager, i);
      if (s.ok()) s = eager.health();  // walks what the Add queued
      if (!s.ok()) {
        eager_fail = i;
        eager_error = s;
      }
    }
    INFO("max_sources " << max);
    REQUIRE(eager_fail < items.size());
    CHECK(lazy_fail == eager_fail);
    CHECK(lazy_error.message() == eager_error.message());
    CHECK(lazy.source_count() == eager.source_count());
  }
}

}  // namespace
}  // namespace taskledger::provenance
