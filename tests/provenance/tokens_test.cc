// The native tokenisers on message bodies and pages: each kind found where a
// reader sees it, nothing invented from ordinary words, and word-boundary
// matching that tells "Eve" from "every".
#include "taskledger/provenance/tokens.h"

#include <catch2/catch.hpp>

namespace taskledger::provenance {
namespace {

std::vector<std::string> Texts(std::string_view text, TokenKind kind) {
  std::vector<std::string> out;
  for (const Token& t : Tokenize(text, KindBit(kind))) out.push_back(t.text);
  return out;
}

using V = std::vector<std::string>;

TEST_CASE("tokens: URLs with and without a scheme", "[provenance]") {
  const std::string body =
      "Read https://www.news.com/a?b=1, then www.secure-site.org. Also see "
      "blog.example.net/post/7 and (http://x.io/). Not a URL: e.g. or v1.2 or end.";
  CHECK(Texts(body, TokenKind::kUrl) == V{"https://www.news.com/a?b=1", "www.secure-site.org",
                                          "blog.example.net/post/7", "http://x.io/"});
  CHECK(Texts("visit dora-website.com now", TokenKind::kUrl) == V{"dora-website.com"});
}

TEST_CASE("tokens: e-mail addresses", "[provenance]") {
  CHECK(Texts("write to fred.x+1@mail.example.com, or bob@b.io.", TokenKind::kEmail) ==
        V{"fred.x+1@mail.example.com", "bob@b.io"});
  CHECK(Texts("@channel and a@b are not addresses", TokenKind::kEmail).empty());
}

TEST_CASE("tokens: account numbers, IBANs with spaces", "[provenance]") {
  const std::string bill =
      "Please pay to IBAN: GB29 NWBK 6016 1331 9268 19 before Friday. Ref 2024-05-01. "
      "Old account US122000000121212121212 closed; card 4111 1111 1111 1111.";
  CHECK(Texts(bill, TokenKind::kAccount) ==
        V{"GB29 NWBK 6016 1331 9268 19", "US122000000121212121212", "4111 1111 1111 1111"});
  // The word after an IBAN is not swallowed.
  CHECK(Texts("DE89370400440532013000 please", TokenKind::kAccount) == V{"DE89370400440532013000"});
}

TEST_CASE("tokens: numbers and money", "[provenance]") {
  const std::string text =
      "Send $1,250.50 or 98.70 EUR, item 42, 3 items; \xE2\x82\xAC"
      "5 fee";
  CHECK(Texts(text, TokenKind::kMoney) == V{"$1,250.50", "98.70 EUR",
                                            "\xE2\x82\xAC"
                                            "5"});
  CHECK(Texts(text, TokenKind::kNumber) == V{"42", "3"});
  CHECK(Texts("abc123 x9 12abc", TokenKind::kNumber).empty());
}

TEST_CASE("tokens: kinds can be combined and offsets point into the text", "[provenance]") {
  const std::string text = "mail eve@x.com about https://x.com/p and 12";
  const auto all = Tokenize(text, KindBit(TokenKind::kEmail) | KindBit(TokenKind::kUrl));
  REQUIRE(all.size() == 2);
  CHECK(all[0].kind == TokenKind::kEmail);
  CHECK(text.substr(all[1].offset, all[1].text.size()) == "https://x.com/p");
  CHECK(ParseTokenKind("url") == TokenKind::kUrl);
  CHECK_FALSE(ParseTokenKind("URL").has_value());
}

TEST_CASE("tokens: word-boundary matching", "[provenance]") {
  CHECK(ContainsWord("Please ask Eve.", "eve"));
  CHECK_FALSE(ContainsWord("every member", "Eve"));
  CHECK_FALSE(ContainsWord("Steve", "Eve"));
  CHECK(ContainsWord("send it to  Alice   Smith today", "alice smith"));
  CHECK(ContainsWord("at www.x.com/a!", "www.x.com/a"));
  CHECK(ContainsWord("\xEF\xBC\xA5\xEF\xBD\x96\xEF\xBD\x85 said", "Eve"));  // full-width
  CHECK_FALSE(ContainsWord("anything", ""));
  CHECK(ContainsWord("Zoë is here", "zoë"));
  CHECK_FALSE(ContainsWord("Zoëlle is here", "zoë"));
}

}  // namespace
}  // namespace taskledger::provenance
