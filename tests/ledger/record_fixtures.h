// Records for the Redis record tests (redis_records_test.cc,
// redis_records_read_test.cc): JSON values of every CBOR head width and type
// nlohmann distinguishes, updates using every optional field, and the
// codec's CBOR of a document (ViaDom), which the direct writers must match.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/ledger/entry.h"

namespace taskledger::test {

using nlohmann::json;

inline std::string ViaDom(const json& j) {
  std::string out;
  json::to_cbor(j, out);
  return out;
}

// JSON values covering every CBOR head width and type nlohmann distinguishes.
inline std::vector<json> Values() {
  std::vector<json> v = {nullptr,
                         true,
                         false,
                         0,
                         23,
                         24,
                         255,
                         256,
                         65535,
                         65536,
                         4294967295ULL,
                         4294967296ULL,
                         std::numeric_limits<uint64_t>::max(),
                         -1,
                         -24,
                         -25,
                         -256,
                         -257,
                         -65536,
                         -65537,
                         -4294967296LL,
                         -4294967297LL,
                         std::numeric_limits<int64_t>::min(),
                         0.5,
                         1.1,
                         -3.25,
                         1e300,
                         -1e-300,
                         3.4028234663852886e38,
                         std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(),
                         std::nan(""),
                         "",
                         "x",
                         std::string(23, 'a'),
                         std::string(24, 'b'),
                         std::string(255, 'c'),
                         std::string(256, 'd'),
                         std::string(70000, 'e'),
                         "caf\xc3\xa9",
                         std::string("\xff\xfe not utf-8 \0 nul", 18),
                         json::array(),
                         json::object(),
                         json::array({1, "two", json::array({3.5})}),
                         json{{"b", 1}, {"a", {{"z", nullptr}}}, {"A", "up"}},
                         json::binary({1, 2, 3}),
                         json::binary({4, 5}, 7)};
  json big_array = json::array();
  for (int i = 0; i < 300; ++i) big_array.push_back(i);
  v.push_back(big_array);
  json big_object = json::object();
  for (int i = 0; i < 30; ++i) big_object["k" + std::to_string(i)] = i;
  v.push_back(big_object);
  return v;
}

inline Update MakeUpdate(UpdateOp op, Category c, std::string key, json value, int variant) {
  Update u;
  u.op = op;
  u.category = c;
  u.key = std::move(key);
  if (op == UpdateOp::kSet) u.value = std::move(value);
  u.provenance.turn = 7 + static_cast<uint64_t>(variant) * 1000;
  u.provenance.source = static_cast<SourceKind>(variant % 4);
  u.provenance.verified = variant % 2 == 0;
  if (variant % 3 != 0) u.provenance.source_id = "get_order#c" + std::to_string(variant);
  if (variant % 4 == 1) u.provenance.rule_id = "order.status";
  if (variant % 5 == 2) u.provenance.pack_version = "sha256:abcd";
  if (variant % 2 == 1) u.expire_after_turns = static_cast<uint64_t>(variant) * 300;
  if (variant % 3 == 1) u.expire_at_ms = variant % 2 ? -5 : 1'700'000'000'000 + variant;
  return u;
}

}  // namespace taskledger::test
