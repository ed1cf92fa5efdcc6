// Key naming for the Redis store (see taskledger/redis/keys.h). Thread-safe.
#include "taskledger/redis/keys.h"

namespace taskledger::internal {
namespace {

constexpr std::string_view kPrefix = "tl:";
constexpr std::string_view kStreamSuffix = "}:turns";

bool IsPlain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // only upper-case is ever written, so only it is accepted
}

// Appends the encoding of `raw` to `out`: the keys of a commit are built with
// one allocation each.
void AppendPercentEncoded(std::string_view raw, std::string& out) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
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
}

}  // namespace

std::string PercentEncodeKeyPart(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  AppendPercentEncoded(raw, out);
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
  tag.reserve(3 * (id.tenant.size() + id.conversation.size()) + 3);
  tag.push_back('{');
  AppendPercentEncoded(id.tenant, tag);
  tag.push_back(':');
  AppendPercentEncoded(id.conversation, tag);
  tag.push_back('}');
  return tag;
}

std::string TurnStreamKey(const ConversationId& id) {
  std::string key;
  key.reserve(kPrefix.size() + 3 * (id.tenant.size() + id.conversation.size()) + 3 +
              kStreamSuffix.size());
  key.append(kPrefix).push_back('{');
  AppendPercentEncoded(id.tenant, key);
  key.push_back(':');
  AppendPercentEncoded(id.conversation, key);
  key.append(kStreamSuffix);
  return key;
}

std::string TenantKeyPrefix(std::string_view tenant) {
  std::string prefix(kPrefix);
  prefix.push_back('{');
  AppendPercentEncoded(tenant, prefix);
  prefix.push_back(':');
  return prefix;
}

std::string TenantStreamPattern(std::string_view tenant) {
  // The encoded tenant holds no glob metacharacter (*?[]\), and the encoded
  // conversation holds no '}' or ':', so '*' matches exactly one conversation.
  return TenantKeyPrefix(tenant).append("*").append(kStreamSuffix);
}

std::optional<std::string> ConversationOfStreamKey(std::string_view key, std::string_view tenant) {
  std::string prefix = TenantKeyPrefix(tenant);
  if (!key.starts_with(prefix) || !key.ends_with(kStreamSuffix)) return std::nullopt;
  if (key.size() < prefix.size() + kStreamSuffix.size()) return std::nullopt;
  std::string_view middle =
      key.substr(prefix.size(), key.size() - prefix.size() - kStreamSuffix.size());
  return PercentDecodeKeyPart(middle);
}

}  // namespace taskledger::internal
