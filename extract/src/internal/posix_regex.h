// PosixRegex: an owned, compiled POSIX extended regular expression (<regex.h>).
//
// extract.json's text rules and user patterns use POSIX ERE rather than
// std::regex because libstdc++'s std::regex matches by recursion and can
// overflow the stack on long inputs; glibc's matcher does not. Matching uses
// REG_STARTEND, so inputs need no NUL terminator and may contain NUL bytes.
// Move-only. glibc's regexec locks the compiled pattern, so one PosixRegex may
// be shared by threads.
#pragma once

#include <regex.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/base/status.h"

namespace taskledger::extract_internal {

struct RegexMatch {
  // Byte offsets into the searched text; groups[0] is the whole match, an
  // unmatched group has begin == std::string::npos.
  struct Group {
    size_t begin = std::string::npos;
    size_t end = std::string::npos;
  };
  std::vector<Group> groups;
};

class PosixRegex {
 public:
  // InvalidArgument with regerror's message if the pattern does not compile.
  static Result<PosixRegex> Compile(const std::string& pattern, bool icase);

  const std::string& pattern() const { return pattern_; }
  size_t group_count() const;

  // Searches text[from..]; "^" matches only at the start of `text`. Fills
  // `match` and returns true on a match.
  bool Search(std::string_view text, size_t from, RegexMatch& match) const;

 private:
  struct Free {
    void operator()(regex_t* r) const {
      regfree(r);
      delete r;
    }
  };
  std::string pattern_;
  std::unique_ptr<regex_t, Free> re_;
};

}  // namespace taskledger::extract_internal
