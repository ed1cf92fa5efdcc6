// The hiredis reply-object functions that build each reply a connection
// reads straight into a Reply value (redis/src/reply_reader.cc), instead of
// a redisReply tree that would then be copied and freed.
//
// Set them on a reader before it reads anything
// (`context->reader->fn = ReplyObjectFunctions()`, or
// redisReaderCreateWithFunctions). A reply the reader hands out is then a
// `Reply*` that the caller owns (delete it; hiredis's freeReplyObject must
// not be used on it). Memory follows the bytes received, never a length a
// server announced: an array's elements are added as they arrive. An
// allocation failure is the reader's out-of-memory error; nothing is thrown
// into hiredis. The functions are stateless: thread-safe.
#pragma once

#include <hiredis/hiredis.h>

namespace taskledger::internal {

redisReplyObjectFunctions* ReplyObjectFunctions();

}  // namespace taskledger::internal
