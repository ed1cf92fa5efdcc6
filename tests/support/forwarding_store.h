// A Store that passes each of its required calls to another (a memory store
// by default) and keeps Store's defaults for the rest (ReadHead,
// ReadHeadAfter, CommitTurns ...): the base of test stores that fail, hold or
// count one call and forward the others.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/store.h"

namespace taskledger::testing {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(std::unique_ptr<Store> inner = NewMemoryStore())
      : inner_(std::move(inner)) {}

  Status CommitTurn(const ConversationId& id, const TurnRecord& turn,
                    const LedgerState& after) override {
    return inner_->CommitTurn(id, turn, after);
  }
  Result<uint64_t> Head(const ConversationId& id) override { return inner_->Head(id); }
  Result<LedgerState> ReadVersion(const ConversationId& id, uint64_t version) override {
    return inner_->ReadVersion(id, version);
  }
  Result<std::vector<TurnRecord>> ReadTurns(const ConversationId& id, uint64_t first,
                                            uint64_t last) override {
    return inner_->ReadTurns(id, first, last);
  }
  Result<std::vector<std::string>> ListConversations(const std::string& tenant) override {
    return inner_->ListConversations(tenant);
  }
  Status DropConversation(const ConversationId& id) override {
    return inner_->DropConversation(id);
  }

 protected:
  Store& inner() { return *inner_; }

 private:
  std::unique_ptr<Store> inner_;
};

}  // namespace taskledger::testing
