// The reply reader (redis/src/reply_reader.cc): hiredis's parser building
// Reply values in place. Fed raw RESP bytes, with no server: nested arrays
// of every kind, nil and empty arrays, input split at every byte, a protocol
// error in the middle of an array (ASan/LSan: nothing leaks), and an array
// whose announced length is far beyond what arrives, which must cost memory
// only for what arrived.
#include <sys/resource.h>

#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "internal/reply_reader.h"
#include "taskledger/redis/client.h"

namespace taskledger::internal {
namespace {

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

ReaderPtr NewReader() { return ReaderPtr(redisReaderCreateWithFunctions(ReplyObjectFunctions())); }

// Feeds `bytes` in pieces of `piece` bytes and reads one reply after all of
// them: null when the reader has none (incomplete input or an error).
std::unique_ptr<Reply> Read(redisReader* reader, const std::string& bytes, size_t piece) {
  for (size_t at = 0; at < bytes.size(); at += piece) {
    REQUIRE(redisReaderFeed(reader, bytes.data() + at, std::min(piece, bytes.size() - at)) ==
            REDIS_OK);
  }
  void* out = nullptr;
  if (redisReaderGetReply(reader, &out) != REDIS_OK) return nullptr;
  return std::unique_ptr<Reply>(static_cast<Reply*>(out));
}

long MaxRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// ["foo", [1, nil, [], "é\0x"], +OK, -ERR no, nil-array]
const std::string kNested = "*5\r\n$3\r\nfoo\r\n*4\r\n:1\r\n$-1\r\n*0\r\n$4\r\n" +
                            std::string("\xc3\xa9\0x", 4) + "\r\n+OK\r\n-ERR no\r\n*-1\r\n";

void CheckNested(const Reply& r) {
  REQUIRE(r.is_array());
  REQUIRE(r.elements().size() == 5);
  CHECK(r.elements()[0].str() == "foo");
  const Reply& inner = r.elements()[1];
  REQUIRE(inner.is_array());
  REQUIRE(inner.elements().size() == 4);
  CHECK(inner.elements()[0].is_integer());
  CHECK(inner.elements()[0].integer() == 1);
  CHECK(inner.elements()[1].is_nil());
  CHECK(inner.elements()[2].is_array());
  CHECK(inner.elements()[2].elements().empty());
  CHECK(inner.elements()[3].str() == std::string("\xc3\xa9\0x", 4));
  CHECK(r.elements()[2].type() == Reply::Type::kStatus);
  CHECK(r.elements()[2].str() == "OK");
  CHECK(r.elements()[3].is_error());
  CHECK(r.elements()[3].str() == "ERR no");
  CHECK(r.elements()[4].is_nil());
}

TEST_CASE("reply reader: nested arrays of every kind, whole and split at every byte", "[redis]") {
  for (size_t piece : {kNested.size(), size_t{1}, size_t{2}, size_t{7}}) {
    INFO("fed " << piece << " byte(s) at a time");
    auto reader = NewReader();
    auto r = Read(reader.get(), kNested, piece);
    REQUIRE(r != nullptr);
    CheckNested(*r);
  }
}

TEST_CASE("reply reader: replies one after another, and a wide array past the presized part",
          "[redis]") {
  std::string wide = "*1000\r\n";
  for (int i = 0; i < 1000; ++i) wide += ":" + std::to_string(i) + "\r\n";
  auto reader = NewReader();
  auto first = Read(reader.get(), kNested + wide + "*-1\r\n", 4096);
  REQUIRE(first != nullptr);
  CheckNested(*first);
  void* out = nullptr;
  REQUIRE(redisReaderGetReply(reader.get(), &out) == REDIS_OK);
  std::unique_ptr<Reply> second(static_cast<Reply*>(out));
  REQUIRE(second != nullptr);
  REQUIRE(second->elements().size() == 1000);
  for (int i = 0; i < 1000; ++i) CHECK(second->elements()[i].integer() == i);
  REQUIRE(redisReaderGetReply(reader.get(), &out) == REDIS_OK);
  std::unique_ptr<Reply> third(static_cast<Reply*>(out));
  REQUIRE(third != nullptr);
  CHECK(third->is_nil());
}

TEST_CASE("reply reader: a protocol error inside an array is an error, nothing leaks", "[redis]") {
  auto reader = NewReader();
  CHECK(Read(reader.get(), "*3\r\n:1\r\n*2\r\n$3\r\nabc\r\n!bad\r\n", 64) == nullptr);
  CHECK(reader->err == REDIS_ERR_PROTOCOL);
}

TEST_CASE("reply reader: an announced length costs memory only for what arrives", "[redis]") {
  // 20 million elements announced, 3 sent: making them all at the header
  // (about 1.4 GB of Reply values) is what a server's word must not buy.
  const long before = MaxRssKb();
  auto reader = NewReader();
  CHECK(Read(reader.get(), "*20000000\r\n:1\r\n:2\r\n:3\r\n", 64) == nullptr);  // incomplete
  CHECK(reader->err == 0);
  CHECK(MaxRssKb() - before < 64 * 1024);  // under 64 MB more than before
}

}  // namespace
}  // namespace taskledger::internal
