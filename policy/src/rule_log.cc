// The rule API's `log(...)` (see internal/rule_log.h).
#include "internal/rule_log.h"

#include <utility>

namespace taskledger::policy_internal {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0.
size_t Utf8Len(const std::string& s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  if (n == 2 && b < 0xC2) return 0;  // overlong
  if (n == 3) {
    auto b1 = static_cast<unsigned char>(s[i + 1]);
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0)) return 0;  // overlong, surrogate
  }
  if (n == 4) {
    auto b1 = static_cast<unsigned char>(s[i + 1]);
    if ((b == 0xF0 && b1 < 0x90) || b > 0xF4 || (b == 0xF4 && b1 >= 0x90)) return 0;
  }
  return n;
}

// Valid UTF-8 of at most `max` bytes (plus "..." when cut).
std::string Clean(const std::string& s, size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), max) + 3);
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Len(s, i);
    const char* piece = n ? s.data() + i : "\xEF\xBF\xBD";
    size_t len = n ? n : 3;
    if (out.size() + len > max) {
      out += "...";
      break;
    }
    out.append(piece, len);
    i += n ? n : 1;
  }
  return out;
}

}  // namespace

void RuleLog::Install(lua_State* L) {
  lua_pushlightuserdata(L, this);
  lua_pushcclosure(L, Log, 1);
  lua_setglobal(L, "log");
}

int RuleLog::Log(lua_State* L) {
  auto* self = static_cast<RuleLog*>(lua_touserdata(L, lua_upvalueindex(1)));
  if (self->total_ >= kMaxLines) {  // nothing more is kept: do not even format
    ++self->dropped_;
    return 0;
  }
  const int n = lua_gettop(L);
  std::string line;
  for (int i = 1; i <= n && line.size() <= kMaxLineBytes; ++i) {
    if (i > 1) line += ' ';
    size_t len = 0;
    const char* s = luaL_tolstring(L, i, &len);  // honours __tostring (metered like any Lua)
    line.append(s, std::min(len, kMaxLineBytes + 4));
    lua_pop(L, 1);
  }
  self->Add(Clean(line, kMaxLineBytes));
  return 0;
}

void RuleLog::Add(std::string line) {
  ++total_;
  lines_.push_back(std::move(line));
}

std::vector<std::string> RuleLog::Take(bool last) {
  if (last && dropped_ > 0) {
    lines_.push_back("(" + std::to_string(dropped_) + " more log lines dropped)");
    dropped_ = 0;
  }
  return std::exchange(lines_, {});
}

}  // namespace taskledger::policy_internal
