// Key slots (CRC16 of the hash tag) and CLUSTER SLOTS parsing; see
// taskledger/redis/slots.h. Pure; thread-safe.
#include "taskledger/redis/slots.h"

namespace taskledger::internal {

uint16_t Crc16(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char byte : data) {
    crc = static_cast<uint16_t>(crc ^ (byte << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

uint16_t KeySlot(std::string_view key) {
  if (auto open = key.find('{'); open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(key) % kClusterSlots);
}

Result<SlotMap> ParseClusterSlots(const Reply& reply, const std::string& seed_host) {
  auto bad = [&](const std::string& what) {
    return Status::Corruption("CLUSTER SLOTS: " + what + " in " + reply.Describe());
  };
  if (!reply.is_array()) return bad("not an array");
  SlotMap map;
  for (const Reply& range : reply.elements()) {
    const auto& e = range.elements();
    if (e.size() < 3 || !e[0].is_integer() || !e[1].is_integer() || !e[2].is_array()) {
      return bad("a malformed slot range");
    }
    int64_t first = e[0].integer(), last = e[1].integer();
    if (first < 0 || last < first || last >= static_cast<int64_t>(kClusterSlots)) {
      return bad("slot range " + std::to_string(first) + "-" + std::to_string(last));
    }
    const auto& node = e[2].elements();
    if (node.size() < 2 || !node[1].is_integer()) return bad("a malformed node");
    ClusterNode primary{node[0].str().empty() ? seed_host : node[0].str(),
                        static_cast<int>(node[1].integer()),
                        node.size() > 2 && node[2].is_string() ? node[2].str() : std::string()};
    size_t index = 0;
    while (index < map.primaries.size() && map.primaries[index].Address() != primary.Address()) {
      ++index;
    }
    if (index == map.primaries.size()) map.primaries.push_back(primary);
    for (int64_t s = first; s <= last; ++s) {
      map.owner[static_cast<size_t>(s)] = static_cast<uint16_t>(index);
    }
  }
  return map;
}

size_t SlotMap::FirstUnservedSlot() const {
  for (size_t s = 0; s < kClusterSlots; ++s) {
    if (owner[s] == kNoOwner) return s;
  }
  return kClusterSlots;
}

}  // namespace taskledger::internal
