// hiredis's reply-object functions, building replies straight into Reply
// values (contract: internal/reply_reader.h).
//
// hiredis 0.14's reader calls one function per value it has read, in wire
// order: the root with task->parent null, then each element of an array with
// task->parent->obj the array and task->idx its index, 0, 1, 2 ... . It
// keeps a pointer only to the arrays still being filled and frees nothing
// but the root (freeObject, which owns every element through its vector).
// An element is therefore appended to its array when it arrives: the
// elements before it are complete, so moving them when the vector grows
// leaves no pointer of the reader's dangling, and an array announced as
// 50 million elements long costs memory only for the elements that came.
#include "internal/reply_reader.h"

#include <algorithm>
#include <cstddef>
#include <new>

#include "taskledger/redis/client.h"

namespace taskledger::internal {

struct ReplyBuilder {
  // Elements reserved when an array's header is read, at most: enough for
  // every reply this library asks for in one allocation, bounded whatever a
  // server announces.
  static constexpr size_t kPresizedElements = 64;

  // The Reply for the value `task` describes: a new root, or the next
  // element of its array. Null when out of memory, or for an element out of
  // the order the reader promises (never seen; refused rather than trusted).
  static Reply* Slot(const redisReadTask* task) {
    if (task->parent == nullptr) return new (std::nothrow) Reply();
    auto* parent = static_cast<Reply*>(task->parent->obj);
    std::vector<Reply>& elements = parent->elements_;
    if (task->idx < 0 || static_cast<size_t>(task->idx) != elements.size()) return nullptr;
    try {
      return &elements.emplace_back();
    } catch (...) {
      return nullptr;
    }
  }
  static void* String(const redisReadTask* task, char* text, size_t len) {
    Reply* r = Slot(task);
    if (r == nullptr) return nullptr;
    r->type_ = task->type == REDIS_REPLY_ERROR    ? Reply::Type::kError
               : task->type == REDIS_REPLY_STATUS ? Reply::Type::kStatus
                                                  : Reply::Type::kString;
    try {
      r->str_.assign(text, len);
    } catch (...) {
      return Failed(task, r);
    }
    return r;
  }
  static void* Array(const redisReadTask* task, int elements) {
    Reply* r = Slot(task);
    if (r == nullptr) return nullptr;
    r->type_ = Reply::Type::kArray;
    try {
      r->elements_.reserve(
          std::min(elements > 0 ? static_cast<size_t>(elements) : 0, kPresizedElements));
    } catch (...) {
      return Failed(task, r);
    }
    return r;
  }
  static void* Integer(const redisReadTask* task, long long value) {
    Reply* r = Slot(task);
    if (r == nullptr) return nullptr;
    r->type_ = Reply::Type::kInteger;
    r->integer_ = value;
    return r;
  }
  static void* Nil(const redisReadTask* task) { return Slot(task); }  // a Reply starts nil
  static void Free(void* reply) { delete static_cast<Reply*>(reply); }

  // A value that could not be made. A root is freed here (the reader never
  // got it); an element stays in its array, which the root owns.
  static void* Failed(const redisReadTask* task, Reply* r) {
    if (task->parent == nullptr) delete r;
    return nullptr;
  }
};

redisReplyObjectFunctions* ReplyObjectFunctions() {
  static redisReplyObjectFunctions functions = {&ReplyBuilder::String, &ReplyBuilder::Array,
                                                &ReplyBuilder::Integer, &ReplyBuilder::Nil,
                                                &ReplyBuilder::Free};
  return &functions;
}

}  // namespace taskledger::internal
