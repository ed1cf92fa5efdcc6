// Fuzz target: the Redis store's direct record readers (ReadStateRecord /
// ReadTurnRecord, ledger/src/redis_records_read.cc) on arbitrary bytes, as a
// tampered or damaged stream entry would give them. Properties: nothing
// crashes or reads past the input; whenever a direct reader reads the bytes,
// the codec (from_cbor, then DecodeState / DecodeTurn) reads them too, to the
// same record (compared by the bytes each writes back, so NaN values compare);
// and what the direct reader read writes back to bytes it reads again to the
// same record. The codec runs only on what a direct reader accepted (which
// nests at most CborReader::kMaxDepth levels).
#include <string>

#include "fuzz_support.h"
#include "internal/redis_records.h"
#include "taskledger/ledger/codec.h"

namespace {

using nlohmann::json;

json FromCbor(std::string_view bytes) {
  return json::from_cbor(bytes.begin(), bytes.end(), /*strict=*/true,
                         /*allow_exceptions=*/false, json::cbor_tag_handler_t::store);
}

template <class T, class Read, class Write, class Decode>
void CheckAgainstCodec(std::string_view bytes, Read read, Write write, Decode decode,
                       const char* what) {
  auto direct = read(bytes);
  if (!direct) return;
  const std::string written = write(*direct);
  const json doc = FromCbor(bytes);
  TL_FUZZ_CHECK(!doc.is_discarded(), std::string("the codec cannot decode a ") + what +
                                         " record the direct reader read");
  auto reference = decode(doc);
  TL_FUZZ_CHECK(reference.has_value(),
                std::string("the codec refuses a ") + what +
                    " record the direct reader read: " + reference.error().ToString());
  TL_FUZZ_CHECK(
      write(reference.value()) == written,
      std::string("the direct reader and the codec read a ") + what + " record differently");
  auto again = read(written);
  TL_FUZZ_CHECK(again.has_value() && write(*again) == written,
                std::string("a ") + what + " record written back does not read again");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace taskledger;
  const std::string_view bytes = fuzz::AsView(data, size);
  CheckAgainstCodec<LedgerState>(
      bytes, [](std::string_view b) { return internal::ReadStateRecord(b); },
      [](const LedgerState& s) { return internal::StateRecordBytes(s); },
      [](const json& j) { return DecodeState(j); }, "state");
  CheckAgainstCodec<TurnRecord>(
      bytes, [](std::string_view b) { return internal::ReadTurnRecord(b); },
      [](const TurnRecord& t) { return internal::TurnRecordBytes(t); },
      [](const json& j) { return DecodeTurn(j); }, "turn");
  return 0;
}
