// std's native text helpers: std.tokens(text, kind...) (the URLs, e-mail
// addresses, account numbers, numbers or money amounts in a text, as
// strings), std.contains_word(text, word) (word-boundary match after
// normalisation: "Eve" is not in "every") and std.normalize(value) (the form
// provenance matches values in). They run in C++ over the provenance
// component's tokenisers, linear in the text, so a rule scanning a page does
// not spend its Lua pattern budget.
#include "taskledger/pack/lua/lua_json.h"
#include "taskledger/pack/lua/lua_std.h"
#include "taskledger/provenance/normalize.h"
#include "taskledger/provenance/tokens.h"

namespace taskledger::lua {
namespace {

std::string_view Arg(lua_State* L, int i) {
  size_t n = 0;
  const char* s = luaL_checklstring(L, i, &n);
  return {s, n};
}

int Tokens(lua_State* L) {
  const std::string_view text = Arg(L, 1);
  provenance::TokenKinds kinds = 0;
  for (int i = 2; i <= lua_gettop(L); ++i) {
    const std::string_view name = Arg(L, i);
    auto kind = provenance::ParseTokenKind(name);
    if (!kind) {
      RaiseError(L, "std.tokens: unknown token kind '" + std::string(name) +
                        "' (url, email, account, number, money)");
    }
    kinds |= provenance::KindBit(*kind);
  }
  if (kinds == 0) kinds = provenance::kAllTokenKinds;
  const auto tokens = provenance::Tokenize(text, kinds);
  lua_createtable(L, static_cast<int>(tokens.size()), 0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    lua_pushlstring(L, tokens[i].text.data(), tokens[i].text.size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
  }
  return 1;
}

int ContainsWord(lua_State* L) {
  lua_pushboolean(L, provenance::ContainsWord(Arg(L, 1), Arg(L, 2)) ? 1 : 0);
  return 1;
}

int Normalize(lua_State* L) {
  const std::string out = provenance::NormalizeValue(Arg(L, 1));
  lua_pushlstring(L, out.data(), out.size());
  return 1;
}

}  // namespace

void AddStdTextHooks(lua_State* L) {
  lua_pushcfunction(L, Tokens);
  lua_setfield(L, -2, "tokens");
  lua_pushcfunction(L, ContainsWord);
  lua_setfield(L, -2, "contains_word");
  lua_pushcfunction(L, Normalize);
  lua_setfield(L, -2, "normalize");
}

}  // namespace taskledger::lua
