// Key naming for the Redis store (see internal/redis_keys.h). Thread-safe.
#include "internal/redis_keys.h"

namespace taskledger::internal {
namespace {

constexpr std::string_view kPrefix = "tl:";
constexpr std::string_view kHeadSuffix = "}:head";

bool IsPlain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // only upper-case is ever written, so only it is accepted
}

}  // namespace

std::string PercentEncodeKeyPart(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(raw.size());
  for (char ch : raw) {
    auto c = static_cast<unsigned char>(ch);
    if (IsPlain(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  return out;
}

std::optional<std::string> PercentDecodeKeyPart(std::string_view encoded) {
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    char ch = encoded[i];
    if (ch != '%') {
      if (!IsPlain(static_cast<unsigned char>(ch))) return std::nullopt;
      out.push_back(ch);
      continue;
    }
    if (i + 2 >= encoded.size()) return std::nullopt;
    int hi = Hex(encoded[i + 1]), lo = Hex(encoded[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// Built with append(): GCC 12 at -O3 flags chains of operator+ on short
// literals with a false -Wrestrict.
std::string ConversationHashTag(const ConversationId& id) {
  std::string tag;
  tag.reserve(id.tenant.size() + id.conversation.size() + 3);
  tag.append("{").append(PercentEncodeKeyPart(id.tenant)).append(":");
  tag.append(PercentEncodeKeyPart(id.conversation)).append("}");
  return tag;
}

LedgerKeys LedgerKeysFor(const ConversationId& id) {
  std::string base(kPrefix);
  base.append(ConversationHashTag(id));
  auto with = [&base](std::string_view suffix) { return std::string(base).append(suffix); };
  return {with(":head"), with(":turns"), with(":snaps"), with(":snapidx")};
}

std::string TenantHeadPattern(std::string_view tenant) {
  // The encoded tenant holds no glob metacharacter (*?[]\), and the encoded
  // conversation holds no '}' or ':', so '*' matches exactly one conversation.
  std::string pattern(kPrefix);
  pattern.append("{").append(PercentEncodeKeyPart(tenant)).append(":*").append(kHeadSuffix);
  return pattern;
}

std::optional<std::string> ConversationOfHeadKey(std::string_view key, std::string_view tenant) {
  std::string prefix(kPrefix);
  prefix.append("{").append(PercentEncodeKeyPart(tenant)).append(":");
  if (!key.starts_with(prefix) || !key.ends_with(kHeadSuffix)) return std::nullopt;
  std::string_view middle = key.substr(prefix.size(), key.size() - prefix.size() - kHeadSuffix.size());
  return PercentDecodeKeyPart(middle);
}

}  // namespace taskledger::internal
