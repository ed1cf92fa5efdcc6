// The index reads each string field once (tokens and normalisation in one
// pass, a token's key cut from the field's normalised text). What a user sees
// must not change: every token of a field, and the field itself, is found
// under exactly the spelling NormalizeValue gives it, as often as it occurs,
// for text full of the obfuscations the normaliser folds (odd spaces,
// zero-width and full-width characters, ligatures, broken UTF-8, URLs and
// account numbers next to them). The expected counts come from the public
// Tokenize and NormalizeValue, applied to each token on its own.
#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "taskledger/provenance/index.h"
#include "taskledger/provenance/normalize.h"
#include "taskledger/provenance/tokens.h"

namespace taskledger::provenance {
namespace {

// How many sources each key should have after indexing {"f": text}: the
// field, and each token that is not the whole field.
std::map<std::string, std::size_t> ExpectedKeys(const std::string& text) {
  std::map<std::string, std::size_t> want;
  if (const std::string k = NormalizeValue(text); !k.empty()) ++want[k];
  const std::vector<Token> tokens = Tokenize(text);
  if (tokens.size() == 1 && tokens[0].text.size() == text.size()) return want;
  for (const Token& t : tokens) {
    if (t.text.size() == text.size()) continue;
    if (const std::string k = NormalizeValue(t.text); !k.empty()) ++want[k];
  }
  return want;
}

void CheckField(const std::string& text) {
  INFO("text: " << nlohmann::json(text).dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace));
  ProvenanceIndex index;
  REQUIRE(index.AddToolOutput(1, "read", "c1", nlohmann::json{{"f", text}}).ok());
  const auto want = ExpectedKeys(text);
  std::size_t total = 0;
  for (const auto& [key, count] : want) total += count;
  CHECK(index.source_count() == total);
  // Each token looked up by its own raw spelling: the lookup normalises it
  // on its own, so a key cut wrongly from the field would not be found.
  std::vector<std::string> spellings{text};
  for (const Token& t : Tokenize(text)) spellings.push_back(t.text);
  for (const std::string& s : spellings) {
    const std::string key = NormalizeValue(s);
    if (key.empty()) continue;
    auto found = index.SourcesOf(s);
    REQUIRE(found.has_value());
    CHECK(found.value().size() == want.at(key));
    for (const Source* src : found.value()) CHECK(src->pointer == "/f");
  }
}

TEST_CASE("index keys: tokens in obfuscated text are found as NormalizeValue spells them",
          "[provenance]") {
  for (const char* text : {
           "Visit https://www.Example.com/x\xC2\xA0 now",
           "IBAN DE89 3704 0044 0532 0130 00, thanks",
           "pay $1,200.50 or 12 EUR to bob@mail.example.org.",
           "\xE2\x80\x8Bwww.\xEF\xBD\x85xample.com/a\xE2\x80\x8B b",
           "  lead\xE3\x80\x80space 1234 5678 9012 trail  ",
           "\xEF\xAC\x81le 12\xE2\x82 34 \xFF 99",
           "a\xC2\xA0\xC2\xA0https://x.io/\xE2\x80\x8B\xC2\xA0",
       }) {
    CheckField(text);
  }
}

TEST_CASE("index keys: random text of the normaliser's hard cases", "[provenance]") {
  const std::vector<std::string> pieces = {"a",
                                           "Z",
                                           "1",
                                           "9",
                                           " ",
                                           ".",
                                           "/",
                                           "@",
                                           "-",
                                           ":",
                                           "https://",
                                           "www.",
                                           "\xC2\xA0",
                                           "\xE2\x80\x8B",
                                           "\t\n",
                                           "\xE3\x80\x80",
                                           "\xEF\xBD\x98",
                                           "\xEF\xAC\x81",
                                           "$",
                                           "\xE2\x82\xAC",
                                           "EUR",
                                           "DE89",
                                           "\xE2\x82",
                                           "\xFF",
                                           ",",
                                           "!",
                                           "\xC3\xBC",
                                           "com",
                                           "_",
                                           "4400",
                                           "example.com/",
                                           "\xC3\x89",
                                           "\xE2\x80\x90",
                                           "\"",
                                           "x@y.de"};
  std::mt19937 rng(20261124);
  std::uniform_int_distribution<std::size_t> piece(0, pieces.size() - 1);
  std::uniform_int_distribution<int> length(1, 24);
  for (int n = 0; n < 1500; ++n) {
    std::string text;
    for (int k = length(rng); k > 0; --k) text += pieces[piece(rng)];
    CheckField(text);
  }
}

TEST_CASE("index keys: queued outputs cost about their text until a question walks them",
          "[provenance]") {
  ProvenanceIndex index;
  const std::string body(10'000, 'x');
  for (int i = 0; i < 20; ++i) {
    REQUIRE(
        index.AddToolOutput(1, "read", "c" + std::to_string(i), nlohmann::json{{"f", body}}).ok());
  }
  CHECK(index.queued_bytes() >= 20 * body.size());
  CHECK(index.queued_bytes() < 20 * (body.size() + 1024));
  CHECK(index.source_count() == 20);  // the question walks the queue
  CHECK(index.queued_bytes() < body.size());
}

}  // namespace
}  // namespace taskledger::provenance
