// Intent binding: whether a value sits in a record (a message, a mail, a
// post) that the user's request designates, so that a link or address taken
// from the record the user pointed to ("the article Bob posted", "the message
// about the restaurant", "the websites posted to general") may decide a call
// while the same kind of value from a record around it in the same output may
// not. The request is the user's messages kept by the index plus any texts the
// caller adds (e.g. a page fetched at an address the user gave).
//
// A record is one of the index's Records from an output of `spec.tools`; its
// text is the field `spec.text_field`. A value is designated, most specific
// rule first:
//  1. by author: when a request text names a word as an author (a capitalised
//     word right after "from"/"by" or right before posted/wrote/sent/said/
//     shared/mentioned/asked) and that word equals, normalised, the
//     `author_field` of records seen whole in the index, then only those
//     records count: the value is designated iff one of their texts holds it;
//  2. else by sentence: a record's text is cut into sentences (at . ! ? before
//     white space, and at line breaks); a sentence sharing a content word (4+
//     letters, not a common word) with the request counts, and the value is
//     designated when such a sentence holds it;
//  3. else by place: a record none of whose sentences matched counts whole
//     when the request names its `place_field` (e.g. the channel) as a word.
// "Holds" means a URL, e-mail, account or number token of the text equals the
// value after NormalizeValue, or the value occurs in the text as a word.
// rules/chat-workspace/lib/designation.lua was the Lua form of this; the rule
// API is call.designated (docs/rule-api.md, "Intent binding"). Pure: reads the
// index, thread-safe as the index's const methods are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "taskledger/base/status.h"
#include "taskledger/provenance/index.h"

namespace taskledger::provenance {

struct DesignationSpec {
  std::vector<std::string> tools;         // whose output records are candidates
  std::string text_field = "body";        // the record's free text
  std::string author_field = "sender";    // who wrote the record ("" = no rule 1)
  std::string place_field = "recipient";  // where it sits ("" = no rule 3)
  std::vector<std::string> request;       // request texts besides the user's messages
};

struct Designation {
  bool designated = false;
  // When designated: the record's source, e.g. `read_inbox(c2) at
  // $[1].body`, and which rule chose it ("author", "sentence", "place").
  std::string record;
  std::string by;
};

// Whether `value` sits in a record the request designates (see above). An
// error when the index is incomplete (ProvenanceIndex::health) or the spec
// names no tool.
Result<Designation> Designate(const ProvenanceIndex& index, const DesignationSpec& spec,
                              std::string_view value);

// The sentences of `text` as rule 2 cuts them (non-empty lines of them).
std::vector<std::string_view> Sentences(std::string_view text);

}  // namespace taskledger::provenance
