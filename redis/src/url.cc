// ParseRedisUrl: turns the redis://, rediss:// and unix:// URLs taskledger accepts into a
// RedisEndpoint, with an InvalidArgument that names what is wrong. Pure and
// thread-safe. (Lives apart from client.cc because it needs no hiredis.)
#include <charconv>
#include <string>
#include <string_view>

#include "taskledger/redis/client.h"

namespace taskledger::internal {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view in, std::string_view what) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) {
      return Status::InvalidArgument("redis URL: truncated %-escape in " + std::string(what));
    }
    int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("redis URL: bad %-escape in " + std::string(what));
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// Parses a non-negative decimal integer in [min, max] that fills all of `text`.
bool ParseBounded(std::string_view text, int min, int max, int& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= min && out <= max;
}

Result<RedisEndpoint> ParseUnix(std::string_view rest) {
  RedisEndpoint ep;
  ep.unix_socket = true;
  std::string_view path = rest, query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    path = rest.substr(0, q);
    query = rest.substr(q + 1);
  }
  if (path.empty() || path.front() != '/') {
    return Status::InvalidArgument(
        "redis URL: unix:// needs an absolute socket path, as in unix:///run/redis.sock");
  }
  auto decoded = PercentDecode(path, "socket path");
  if (!decoded) return decoded.error();
  ep.socket_path = std::move(decoded.value());
  if (!query.empty()) {
    if (query.substr(0, 3) != "db=" || !ParseBounded(query.substr(3), 0, 1 << 20, ep.db)) {
      return Status::InvalidArgument("redis URL: the only unix:// query is ?db=N, got '?" +
                                     std::string(query) + "'");
    }
  }
  return ep;
}

Result<RedisEndpoint> ParseTcp(std::string_view rest) {
  RedisEndpoint ep;
  // The password may hold any byte once percent-encoded, so the last '@'
  // ends the user info.
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = userinfo.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(
          "redis URL: user info needs a password: redis://user:password@host or "
          "redis://:password@host");
    }
    auto user = PercentDecode(userinfo.substr(0, colon), "user");
    if (!user) return user.error();
    auto password = PercentDecode(userinfo.substr(colon + 1), "password");
    if (!password) return password.error();
    if (password->empty()) return Status::InvalidArgument("redis URL: empty password");
    ep.user = std::move(user.value());
    ep.password = std::move(password.value());
  }
  std::string_view hostport = rest, db;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    db = rest.substr(slash + 1);
  }
  std::string_view port;
  if (!hostport.empty() && hostport.front() == '[') {  // [IPv6]:port
    auto close = hostport.find(']');
    if (close == std::string_view::npos)
      return Status::InvalidArgument("redis URL: unclosed '[' in host");
    ep.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument("redis URL: junk after ']' in host");
      port = after.substr(1);
      if (port.empty()) return Status::InvalidArgument("redis URL: empty port");
    }
  } else if (auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
    ep.host = std::string(hostport.substr(0, colon));
    port = hostport.substr(colon + 1);
    if (port.empty()) return Status::InvalidArgument("redis URL: empty port");
  } else {
    ep.host = std::string(hostport);
  }
  if (ep.host.empty()) return Status::InvalidArgument("redis URL: missing host");
  if (!port.empty() && !ParseBounded(port, 1, 65535, ep.port)) {
    return Status::InvalidArgument("redis URL: port must be 1..65535, got '" + std::string(port) +
                                   "'");
  }
  if (!db.empty() && !ParseBounded(db, 0, 1 << 20, ep.db)) {
    return Status::InvalidArgument("redis URL: database must be a number, got '/" +
                                   std::string(db) + "'");
  }
  return ep;
}

bool IsTlsOption(std::string_view key) {
  return key == "ca" || key == "cert" || key == "key" || key == "sni";
}

// Splits "...?query" at the first '?' after the user info (a password may
// hold a '?'). The query is empty when there is none.
void SplitQuery(std::string_view rest, std::string_view& before, std::string_view& query) {
  size_t at = rest.rfind('@');
  size_t q = rest.find('?', at == std::string_view::npos ? 0 : at);
  before = rest.substr(0, q);
  query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
}

// Applies a rediss:// query (ca, cert, key, sni; values percent-encoded).
Status ParseTlsQuery(std::string_view query, RedisEndpoint& ep) {
  ep.tls = true;
  while (!query.empty()) {
    std::string_view item = query.substr(0, query.find('&'));
    query = item.size() < query.size() ? query.substr(item.size() + 1) : std::string_view();
    auto eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    if (eq == std::string_view::npos || !IsTlsOption(key)) {
      return Status::InvalidArgument("redis URL: unknown TLS option '" + std::string(item) +
                                     "' (known: ca=FILE, cert=FILE, key=FILE, sni=NAME)");
    }
    auto value = PercentDecode(item.substr(eq + 1), key);
    if (!value) return value.error();
    if (value->empty()) {
      return Status::InvalidArgument("redis URL: empty TLS option '" + std::string(key) + "'");
    }
    if (key == "ca") ep.tls_ca_file = std::move(value.value());
    if (key == "cert") ep.tls_cert_file = std::move(value.value());
    if (key == "key") ep.tls_key_file = std::move(value.value());
    if (key == "sni") ep.tls_server_name = std::move(value.value());
  }
  if (ep.tls_cert_file.empty() != ep.tls_key_file.empty()) {
    return Status::InvalidArgument("redis URL: a TLS client certificate needs both cert= and key=");
  }
  return Status::Ok();
}

}  // namespace

bool IsClusterUrl(std::string_view url) {
  return url.starts_with(kClusterScheme) || url.starts_with(kTlsClusterScheme);
}

Status TakeDurabilityQuery(std::string& url, uint32_t& replicas,
                           std::chrono::milliseconds& replica_timeout) {
  if (!url.starts_with("redis://") && !url.starts_with("rediss://") && !IsClusterUrl(url)) {
    return Status::Ok();
  }
  size_t at = url.rfind('@');
  size_t q = url.find('?', at == std::string::npos ? 0 : at);
  if (q == std::string::npos) return Status::Ok();
  std::string_view query = std::string_view(url).substr(q + 1);
  std::string kept;  // the TLS options, for ParseRedisUrl / ParseClusterUrl
  while (!query.empty()) {
    std::string_view item = query.substr(0, query.find('&'));
    query = item.size() < query.size() ? query.substr(item.size() + 1) : std::string_view();
    auto eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    if (IsTlsOption(key) && (url.starts_with("rediss") || url.starts_with(kTlsClusterScheme))) {
      kept += (kept.empty() ? "" : "&") + std::string(item);
      continue;
    }
    int value = 0;
    if (eq == std::string_view::npos || !ParseBounded(item.substr(eq + 1), 0, 1 << 20, value)) {
      return Status::InvalidArgument("redis URL: '" + std::string(item) +
                                     "' is not name=number (replicas, replica_timeout_ms)");
    }
    if (key == "replicas") {
      replicas = static_cast<uint32_t>(value);
    } else if (key == "replica_timeout_ms") {
      replica_timeout = std::chrono::milliseconds(value);
    } else {
      return Status::InvalidArgument("redis URL: unknown option '" + std::string(key) +
                                     "' (known: replicas, replica_timeout_ms)");
    }
  }
  url.resize(q);
  if (!kept.empty()) url += "?" + kept;
  return Status::Ok();
}

Result<std::vector<RedisEndpoint>> ParseClusterUrl(std::string_view url) {
  if (!IsClusterUrl(url)) {
    return Status::InvalidArgument(
        "cluster URL must start with redis+cluster:// or rediss+cluster://, got '" +
        std::string(url.substr(0, 40)) + "'");
  }
  const bool tls = url.starts_with(kTlsClusterScheme);
  std::string_view rest, query, userinfo;
  SplitQuery(url.substr(tls ? kTlsClusterScheme.size() : kClusterScheme.size()), rest, query);
  if (!tls && !query.empty()) {
    return Status::InvalidArgument("redis URL: unknown option '?" + std::string(query) + "'");
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    userinfo = rest.substr(0, at + 1);
    rest = rest.substr(at + 1);
  }
  std::vector<RedisEndpoint> seeds;
  while (true) {
    auto comma = rest.find(',');
    std::string_view node = rest.substr(0, comma);
    if (node.empty()) return Status::InvalidArgument("redis URL: empty node in the cluster list");
    auto ep = ParseTcp(std::string(userinfo) + std::string(node));
    if (!ep) return ep.error();
    if (ep->db != 0 || node.find('/') != std::string_view::npos) {
      return Status::InvalidArgument("redis URL: a cluster has no databases; drop the '/" +
                                     std::to_string(ep->db) + "'");
    }
    if (tls) {
      if (Status s = ParseTlsQuery(query, ep.value()); !s.ok()) return s;
    }
    seeds.push_back(std::move(ep.value()));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return seeds;
}

Result<RedisEndpoint> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kRedis = "redis://", kUnix = "unix://";
  if (url.starts_with(kRedis)) {
    std::string_view rest = url.substr(kRedis.size());
    if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
    if (rest.find(',') != std::string_view::npos) {
      return Status::InvalidArgument(
          "redis URL: several nodes are a cluster: redis+cluster://host:port,host:port");
    }
    return ParseTcp(url.substr(kRedis.size()));
  }
  if (url.starts_with(kUnix)) return ParseUnix(url.substr(kUnix.size()));
  constexpr std::string_view kRediss = "rediss://";
  if (url.starts_with(kRediss)) {
    std::string_view rest, query;
    SplitQuery(url.substr(kRediss.size()), rest, query);
    std::string_view hosts = rest;
    if (auto at = hosts.rfind('@'); at != std::string_view::npos) hosts = hosts.substr(at + 1);
    if (hosts.find(',') != std::string_view::npos) {
      return Status::InvalidArgument(
          "redis URL: several nodes are a cluster: rediss+cluster://host:port,host:port");
    }
    auto ep = ParseTcp(rest);
    if (!ep) return ep.error();
    if (Status s = ParseTlsQuery(query, ep.value()); !s.ok()) return s;
    return ep;
  }
  if (IsClusterUrl(url)) {
    return Status::InvalidArgument(
        "redis URL: a redis+cluster:// URL names a cluster, not one node");
  }
  return Status::InvalidArgument("redis URL must start with redis://, rediss:// or unix://, got '" +
                                 std::string(url.substr(0, 40)) + "'");
}

}  // namespace taskledger::internal
