// NormalizeValue on what agents and attackers do to values: case, spacing,
// URL spellings, spaced account numbers, full-width forms and zero-width
// characters all land on the same form; different values stay different.
#include "taskledger/provenance/normalize.h"

#include <catch2/catch.hpp>

namespace taskledger::provenance {
namespace {

TEST_CASE("normalize: case and whitespace", "[provenance]") {
  CHECK(NormalizeValue("  Alice   Smith\t") == "alice smith");
  CHECK(NormalizeValue("ALICE\nSMITH") == NormalizeValue("alice smith"));
  CHECK(NormalizeValue("").empty());
  CHECK(NormalizeValue(" \t ").empty());
  CHECK(NormalizeValue("Ünïcode ÉTÉ") == "ünïcode été");
}

TEST_CASE("normalize: URL scheme, www and trailing slashes", "[provenance]") {
  const std::string want = "example.com/page";
  CHECK(NormalizeValue("https://www.example.com/page/") == want);
  CHECK(NormalizeValue("http://example.com/page") == want);
  CHECK(NormalizeValue("EXAMPLE.com/page//") == want);
  CHECK(NormalizeValue("www.example.com/page") == want);
  CHECK(NormalizeValue("https://example.com/") == "example.com");
  CHECK(NormalizeValue("https://example.com/other") != want);
  // An e-mail address is not a URL and keeps its form.
  CHECK(NormalizeValue("Bob@Example.com") == "bob@example.com");
}

TEST_CASE("normalize: spaces and hyphens inside account numbers", "[provenance]") {
  const std::string want = "de89370400440532013000";
  CHECK(NormalizeValue("DE89 3704 0044 0532 0130 00") == want);
  CHECK(NormalizeValue("DE89370400440532013000") == want);
  CHECK(NormalizeValue("de89-3704-0044-0532-0130-00") == want);
  CHECK(NormalizeValue("1234 5678 9012") == "123456789012");
  // Words with few digits are not account numbers: their spaces stay.
  CHECK(NormalizeValue("room 12 floor 3") == "room 12 floor 3");
  CHECK(NormalizeValue("DE89 3704 0044 0532 0130 01") != want);
}

TEST_CASE("normalize: unicode compatibility forms and invisible characters", "[provenance]") {
  // Full-width letters and digits.
  CHECK(NormalizeValue("\xEF\xBC\xA5\xEF\xBD\x96\xEF\xBD\x85") == "eve");  // Ｅｖｅ
  CHECK(NormalizeValue("\xEF\xBC\x91\xEF\xBC\x92") == "12");               // １２
  // Zero-width space, joiner, BOM and soft hyphen inside a word.
  CHECK(NormalizeValue("E\xE2\x80\x8Bv\xE2\x80\x8D"
                       "e\xEF\xBB\xBF") == "eve");
  CHECK(NormalizeValue("ev\xC2\xAD"
                       "e") == "eve");
  // No-break and ideographic spaces are spaces.
  CHECK(NormalizeValue("Alice\xC2\xA0Smith") == "alice smith");
  CHECK(NormalizeValue("Alice\xE3\x80\x80Smith") == "alice smith");
  // Ligatures.
  CHECK(NormalizeValue("\xEF\xAC\x81le") == "file");
  // A full-width URL with a zero-width space still is the URL.
  CHECK(NormalizeValue("https://www.\xEF\xBD\x85vil.com/\xE2\x80\x8B") == "evil.com");
  // Bytes that are not UTF-8 pass through unchanged.
  CHECK(NormalizeValue(std::string("a\xFF") + "b") == std::string("a\xFF") + "b");
}

}  // namespace
}  // namespace taskledger::provenance
