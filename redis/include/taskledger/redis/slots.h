// Redis Cluster key slots and slot maps: which of the 16,384 slots a key
// hashes to (CRC16 of its hash tag, as the Cluster specification defines it),
// and the slot -> primary map read from CLUSTER SLOTS. Pure functions and
// plain values; thread-safe. The router (taskledger/redis/router.h) is their
// user.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/redis/client.h"

namespace taskledger::internal {

inline constexpr size_t kClusterSlots = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with. Crc16("123456789") == 0x31C3.
uint16_t Crc16(std::string_view data);

// The slot of `key`: CRC16 of the hash tag (the bytes between the first '{'
// and the first '}' after it, when that span is non-empty), else of the whole
// key, modulo 16384. Agrees with the server's CLUSTER KEYSLOT.
uint16_t KeySlot(std::string_view key);

// A node of a cluster as CLUSTER SLOTS names it. `id` is its node id (the
// 40 hex characters CLUSTER MYID answers), empty when the reply gave none.
struct ClusterNode {
  std::string host;
  int port = 0;
  std::string id;
  std::string Address() const { return host + ":" + std::to_string(port); }
};

// The primary serving each slot. `owner[s]` indexes `primaries`; kNoOwner:
// no node serves slot s (the cluster does not cover it).
struct SlotMap {
  static constexpr uint16_t kNoOwner = 0xFFFF;
  std::vector<ClusterNode> primaries;
  std::array<uint16_t, kClusterSlots> owner;
  SlotMap() { owner.fill(kNoOwner); }
  // The first slot no primary serves, or kClusterSlots when all are served.
  size_t FirstUnservedSlot() const;
};

// Reads a CLUSTER SLOTS reply ([[start, end, [host, port, id...], replicas...]...]).
// A node reported with an empty host (the seed itself, on some versions) gets
// `seed_host`. Corruption for a reply of another shape.
Result<SlotMap> ParseClusterSlots(const Reply& reply, const std::string& seed_host);

}  // namespace taskledger::internal
