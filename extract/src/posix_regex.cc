// Compiling and running POSIX extended regular expressions for text rules and
// user patterns. Thread-safe (see posix_regex.h).
#include "internal/posix_regex.h"

namespace taskledger::extract_internal {

Result<PosixRegex> PosixRegex::Compile(const std::string& pattern, bool icase) {
  auto re = std::unique_ptr<regex_t, Free>(new regex_t);
  int flags = REG_EXTENDED | (icase ? REG_ICASE : 0);
  if (int rc = regcomp(re.get(), pattern.c_str(), flags); rc != 0) {
    char buf[256];
    regerror(rc, re.get(), buf, sizeof buf);
    // regcomp failed, so there is nothing for regfree to release.
    delete re.release();
    return Status::InvalidArgument("regular expression '" + pattern + "': " + buf);
  }
  PosixRegex r;
  r.pattern_ = pattern;
  r.re_ = std::move(re);
  return r;
}

size_t PosixRegex::group_count() const { return re_->re_nsub; }

bool PosixRegex::Search(std::string_view text, size_t from, RegexMatch& match) const {
  size_t n = re_->re_nsub + 1;
  std::vector<regmatch_t> m(n);
  m[0].rm_so = static_cast<regoff_t>(from);
  m[0].rm_eo = static_cast<regoff_t>(text.size());
  // An empty string_view may have a null data(); regexec needs a valid pointer.
  const char* base = text.data() != nullptr ? text.data() : "";
  if (regexec(re_.get(), base, n, m.data(), REG_STARTEND) != 0) return false;
  match.groups.assign(n, RegexMatch::Group{});
  for (size_t i = 0; i < n; ++i) {
    if (m[i].rm_so < 0) continue;
    match.groups[i] = {static_cast<size_t>(m[i].rm_so), static_cast<size_t>(m[i].rm_eo)};
  }
  return true;
}

}  // namespace taskledger::extract_internal
