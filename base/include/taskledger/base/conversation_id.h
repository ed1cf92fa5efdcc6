// ConversationId: which conversation of which tenant. Every store, the
// command ledger and the session key their data by it; tenants are separate
// namespaces whatever bytes the ids contain. Plain value type.
#pragma once

#include <compare>
#include <string>

namespace taskledger {

struct ConversationId {
  std::string tenant = "default";
  std::string conversation;
  bool operator==(const ConversationId&) const = default;
  auto operator<=>(const ConversationId&) const = default;
};

}  // namespace taskledger
