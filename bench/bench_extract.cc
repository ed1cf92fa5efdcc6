// bench_extract: what extracting ledger updates from one tool output costs,
// against the floor of parsing the same output with nlohmann::json alone.
// The output is a ~1 KB retail order; the rules are 20 mappings over it
// (plain paths, array wildcards, templates, coercions, expiry) yielding 25
// updates. What extraction adds to the parse: the depth pre-scan, resolving
// the pointers the mappings share, walking the wildcards, rendering keys (one
// heap allocation each; values are moved out of the parsed output where no
// other update needs them, provenance strings are shared) and destroying the
// updates.
// Both are measured interleaved in one run so both see the same machine load;
// the extraction includes everything it does (size and UTF-8 checks, the depth
// pre-scan, the parse, every mapping, building the updates).
// The provenance index (#23) is measured the same way: a Session extracts from
// the parsed output and adds it to the conversation's ProvenanceIndex, so
// "extract_indexed" is ExtractParsedToolOutput plus AddToolOutput into an
// index already holding a user message and 50 outputs, against
// ExtractParsedToolOutput alone; "index_cost" is their ratio minus 1 (goal
// <= 0.15). The index is lazy (it queues the output; the first provenance
// question walks it), so "index_walk_p50_us" is that deferred walk of the
// one output, paid only by a conversation whose rules ask provenance. The
// added outputs are then dropped (a fresh index per batch, copied from the
// prepared, already walked one outside the timed span).
//
// Usage: bench_extract [--samples N] [--batch N]
// The last line of output is one JSON object:
// {"extract_p50_us":..,"parse_p50_us":..,"ratio":..,"extract_p99_us":..,
//  "parse_p99_us":..,"output_bytes":..,"mappings":..,"updates":..,
//  "parsed_extract_p50_us":..,"indexed_extract_p50_us":..,"index_cost":..,
//  "indexed_extract_p99_us":..,"index_walk_p50_us":..}
// Single-threaded.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/extract/extraction_rules.h"
#include "taskledger/extract/extractor.h"
#include "taskledger/provenance/index.h"

using namespace taskledger;
using SteadyClock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

const char* kOutput = R"({
  "order_id": "#W2378156", "user_id": "yusuf_rossi_9620", "status": "delivered",
  "address": {"address1": "763 Broadway", "address2": "Suite 135", "city": "Philadelphia",
              "country": "USA", "state": "PA", "zip": "19122"},
  "items": [
    {"name": "Headphones", "product_id": "6992792935", "item_id": "4202497723", "price": 342.81,
     "options": {"type": "over-ear", "connectivity": "wireless", "color": "red"}},
    {"name": "Vacuum Cleaner", "product_id": "1762337868", "item_id": "4602305039", "price": 561.05,
     "options": {"type": "robotic", "bagged/bagless": "bagged", "features": "cordless"}},
    {"name": "Mechanical Keyboard", "product_id": "1656367028", "item_id": "1151293680",
     "price": 272.33, "options": {"switch type": "linear", "backlight": "RGB", "size": "full size"}}
  ],
  "fulfillments": [{"tracking_id": ["843053632392"],
                    "item_ids": ["4202497723", "4602305039", "1151293680"]}],
  "payment_history": [{"transaction_type": "payment", "amount": 1819.92,
                       "payment_method_id": "credit_card_9513926"}],
  "hold": {"reason": "review", "days_remaining": 2}
})";

json Mapping(const char* id, const char* path, const char* key,
             const json& extra = json::object()) {
  json m = {{"id", id}, {"path", path}, {"category", "fact"}, {"key", key}};
  m.update(extra);
  return m;
}

json Rules() {
  // Like a real pack: mostly single fields, a few wildcards over the items.
  json list = json::array({
      Mapping("order.status", "/status", "order.{order_id}.status"),
      Mapping("order.user", "/user_id", "order.{/order_id}.user_id"),
      Mapping("order.zip", "/address/zip", "order.{/order_id}.zip"),
      Mapping("order.city", "/address/city", "order.{/order_id}.city"),
      Mapping("order.state", "/address/state", "order.{/order_id}.state"),
      Mapping("order.country", "/address/country", "order.{/order_id}.country"),
      Mapping("order.address", "/address", "order.{/order_id}.address"),
      Mapping("order.item_price", "/items/*/price", "order.{/order_id}.item.{item_id}.price",
              {{"coerce", "number"}}),
      Mapping("order.item_product", "/items/*/product_id", "item.{item_id}.product_id"),
      Mapping("order.item_name", "/items/*/name", "item.{item_id}.name", {{"coerce", "string"}}),
      Mapping("order.item_color", "/items/*/options/color", "item.{/items/0/item_id}.color.{$1}"),
      Mapping("order.tracking", "/fulfillments/*/tracking_id/0", "order.{/order_id}.tracking.{$1}"),
      Mapping("order.first_fulfilled", "/fulfillments/0/item_ids/0",
              "order.{/order_id}.first_shipped", {{"value", true}}),
      Mapping("order.total", "/payment_history/0/amount", "order.{/order_id}.total",
              {{"coerce", "number"}}),
      Mapping("order.paid_with", "/payment_history/*/payment_method_id",
              "order.{/order_id}.paid_with.{payment_method_id}", {{"value", true}}),
      Mapping("order.payment_kind", "/payment_history/0/transaction_type",
              "order.{/order_id}.payment_kind"),
      Mapping("order.summary", "/status", "order.{/order_id}.summary",
              {{"value", "{/status} order of {/user_id}"}}),
      Mapping("order.hold", "/hold/reason", "order.{/order_id}.hold",
              {{"expire", {{"seconds_from", "/hold/days_remaining"}, {"unit", "days"}}}}),
      Mapping("order.hold_days", "/hold/days_remaining", "order.{/order_id}.hold_days",
              {{"coerce", "integer"}, {"expire", {{"turns", 5}}}}),
      Mapping("order.refund", "/refund/amount", "order.{/order_id}.refund"),  // absent: no update
  });
  return {{"tools", {{"get_order_details", list}}}};
}

// A conversation's index before the measured output: the user's message and
// 50 earlier order outputs (other ids), as a Session would hold.
provenance::ProvenanceIndex PreparedIndex(const json& order) {
  auto trust = provenance::TrustPolicy::FromJson(
      json::parse(R"({"tools": {"get_order_details": {"/order_id": true, "/user_id": true,
                                                     "/items/*/item_id": true}}})"));
  provenance::ProvenanceIndex index(trust.value());
  (void)index.AddUserMessage(1, "Please return the headphones of order #W2378156, my zip is 19122");
  for (int i = 0; i < 50; ++i) {
    json other = order;
    other["order_id"] = "#W" + std::to_string(1000000 + i);
    (void)index.AddToolOutput(1, "get_order_details", "e" + std::to_string(i), other);
  }
  return index;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[idx];
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 2000;
  int batch = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--samples") == 0) {
      samples = std::max(1, std::atoi(argv[i + 1]));
    } else if (std::strcmp(argv[i], "--batch") == 0) {
      batch = std::max(1, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "usage: bench_extract [--samples N] [--batch N]\n");
      return 2;
    }
  }
  json spec = Rules();
  // A real pack version: a SHA-256 in hex, copied into every update.
  auto rules = ExtractionRules::FromJson(
      spec, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  if (!rules.has_value()) {
    std::fprintf(stderr, "bench_extract: %s\n", rules.error().ToString().c_str());
    return 1;
  }
  Extractor extractor(rules.value());
  ProposedCall call{"c1", "get_order_details", {{"order_id", "#W2378156"}}};
  const std::string output = kOutput;

  Extraction check = extractor.ExtractToolOutput(call, output);
  if (!check.errors.empty()) {
    std::fprintf(stderr, "bench_extract: unexpected error %s\n",
                 EncodeExtractionError(check.errors[0]).dump().c_str());
    return 1;
  }

  std::vector<double> parse_us, extract_us, parsed_us, indexed_us, walk_us;
  size_t sink = 0;
  const json parsed = json::parse(output);
  const provenance::ProvenanceIndex prepared = PreparedIndex(parsed);
  sink += prepared.source_count();  // walks the prepared outputs: only the measured one is queued
  std::vector<provenance::ProvenanceIndex> indexes(static_cast<size_t>(batch), prepared);
  for (int s = 0; s < samples; ++s) {
    auto t0 = SteadyClock::now();
    for (int b = 0; b < batch; ++b) sink += json::parse(output).size();
    auto t1 = SteadyClock::now();
    for (int b = 0; b < batch; ++b)
      sink += extractor.ExtractToolOutput(call, output).updates.size();
    auto t2 = SteadyClock::now();
    for (int b = 0; b < batch; ++b)
      sink += extractor.ExtractParsedToolOutput(call, parsed).updates.size();
    auto t3 = SteadyClock::now();
    for (int b = 0; b < batch; ++b) {
      sink += extractor.ExtractParsedToolOutput(call, parsed).updates.size();
      sink += indexes[static_cast<size_t>(b)].AddToolOutput(1, call.tool, call.id, parsed).ok();
    }
    auto t4 = SteadyClock::now();
    for (int b = 0; b < batch; ++b) sink += indexes[static_cast<size_t>(b)].source_count();
    auto t5 = SteadyClock::now();
    parse_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / batch);
    extract_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count() / batch);
    parsed_us.push_back(std::chrono::duration<double, std::micro>(t3 - t2).count() / batch);
    indexed_us.push_back(std::chrono::duration<double, std::micro>(t4 - t3).count() / batch);
    walk_us.push_back(std::chrono::duration<double, std::micro>(t5 - t4).count() / batch);
    for (auto& index : indexes) index = prepared;  // untimed: drop the added output
  }
  double parse50 = Percentile(parse_us, 0.5), extract50 = Percentile(extract_us, 0.5);
  double parsed50 = Percentile(parsed_us, 0.5), indexed50 = Percentile(indexed_us, 0.5);
  std::printf("output %zu bytes, %zu mappings, %zu updates per extraction (sink %zu)\n",
              output.size(), spec["tools"]["get_order_details"].size(), check.updates.size(), sink);
  std::printf("parse   p50 %.2f us  p99 %.2f us\n", parse50, Percentile(parse_us, 0.99));
  std::printf("extract p50 %.2f us  p99 %.2f us  (%.2fx parse)\n", extract50,
              Percentile(extract_us, 0.99), extract50 / parse50);
  std::printf("parsed extract p50 %.2f us; + index p50 %.2f us p99 %.2f us (index cost %.1f%%)\n",
              parsed50, indexed50, Percentile(indexed_us, 0.99), (indexed50 / parsed50 - 1) * 100);
  json result = {{"extract_p50_us", std::round(extract50 * 100) / 100},
                 {"parse_p50_us", std::round(parse50 * 100) / 100},
                 {"ratio", std::round(extract50 / parse50 * 100) / 100},
                 {"extract_p99_us", std::round(Percentile(extract_us, 0.99) * 100) / 100},
                 {"parse_p99_us", std::round(Percentile(parse_us, 0.99) * 100) / 100},
                 {"output_bytes", output.size()},
                 {"mappings", spec["tools"]["get_order_details"].size()},
                 {"updates", check.updates.size()},
                 {"parsed_extract_p50_us", std::round(parsed50 * 100) / 100},
                 {"indexed_extract_p50_us", std::round(indexed50 * 100) / 100},
                 {"index_cost", std::round((indexed50 / parsed50 - 1) * 1000) / 1000},
                 {"indexed_extract_p99_us", std::round(Percentile(indexed_us, 0.99) * 100) / 100}};
  std::printf("first question's walk of the output p50 %.2f us\n", Percentile(walk_us, 0.5));
  result["index_walk_p50_us"] = std::round(Percentile(walk_us, 0.5) * 100) / 100;
  std::printf("%s\n", result.dump().c_str());
  return 0;
}
