// Implementation of the pattern cost bound (see internal/pattern_guard.h).
#include "taskledger/pack/lua/pattern_guard.h"

#include <cctype>

namespace taskledger::lua {
namespace {

// Skips a set "[...]" starting at p[i] == '['; returns the index after ']'.
size_t SkipSet(std::string_view p, size_t i) {
  ++i;
  if (i < p.size() && p[i] == '^') ++i;
  if (i < p.size() && p[i] == ']') ++i;  // a leading ']' is literal
  while (i < p.size() && p[i] != ']') i += (p[i] == '%') ? 2 : 1;
  return i + 1;
}

}  // namespace

double EstimatePatternWork(std::string_view p, size_t subject_len, bool scan_all) {
  const double n = static_cast<double>(subject_len);
  size_t i = 0;
  bool anchored = false;
  if (!p.empty() && p[0] == '^') {
    anchored = true;
    i = 1;
  }
  int variable = 0;  // items quantified by * + -
  int optional = 0;  // items quantified by ?
  int scanning = 0;  // %b and back-references: each may scan n bytes
  double items = 1;
  while (i < p.size()) {
    char c = p[i];
    if (c == '(' || c == ')') {
      ++i;
      continue;
    }
    if (c == '$' && i + 1 == p.size()) break;
    if (c == '%' && i + 1 < p.size()) {
      char d = p[i + 1];
      if (d == 'b') {
        ++scanning;
        i += 4;
        ++items;
        continue;
      }
      if (d == 'f') {
        i = (i + 2 < p.size() && p[i + 2] == '[') ? SkipSet(p, i + 2) : i + 2;
        ++items;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(d))) {
        ++scanning;
        i += 2;
        ++items;
        continue;
      }
      i += 2;
    } else if (c == '[') {
      i = SkipSet(p, i);
    } else {
      ++i;
    }
    ++items;
    if (i < p.size()) {
      char q = p[i];
      if (q == '*' || q == '+' || q == '-') {
        ++variable;
        ++i;
      } else if (q == '?') {
        ++optional;
        ++i;
      }
    }
  }
  double work = (anchored && !scan_all) ? 1.0 : n + 1.0;
  for (int k = 1; k <= variable; ++k) work *= (n + k) / k;  // C(n+q, q)
  for (int k = 0; k < optional && work < 1e300; ++k) work *= 2.0;
  for (int k = 0; k < scanning && work < 1e300; ++k) work *= n + 1.0;
  return work * items;
}

}  // namespace taskledger::lua
