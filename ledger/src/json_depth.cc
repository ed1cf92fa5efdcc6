// JsonNestsDeeperThan (see taskledger/json_depth.h): one pass over the text,
// skipping strings with memchr to their closing unescaped quote.
#include "taskledger/json_depth.h"

#include <cstddef>
#include <cstring>

namespace taskledger {

bool JsonNestsDeeperThan(std::string_view text, int max_depth) {
  const char* p = text.data();
  const char* end = p + text.size();
  int depth = 0;
  while (p < end) {
    char c = *p++;
    if (c == '"') {
      // Skip the string: find the closing quote that no backslash escapes.
      while (true) {
        const void* q = std::memchr(p, '"', static_cast<size_t>(end - p));
        if (q == nullptr) return false;  // unterminated: the parser reports it
        const char* quote = static_cast<const char*>(q);
        size_t backslashes = 0;
        for (const char* b = quote; b > p && b[-1] == '\\'; --b) ++backslashes;
        p = quote + 1;
        if (backslashes % 2 == 0) break;
      }
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace taskledger
