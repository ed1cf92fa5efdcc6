// http::Client over cpp-httplib (see taskledger/http/client.h), and URL
// parsing. Debian's httplib is built with OpenSSL, so https:// works; the
// server's certificate is verified against the system's store.
#include "taskledger/http/client.h"

#include <httplib.h>

#include <charconv>

namespace taskledger::http {

Result<Url> ParseUrl(std::string_view url) {
  Url out;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos)
    return Status::InvalidArgument("not an absolute URL: " + std::string(url));
  out.scheme = std::string(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https") {
    return Status::InvalidArgument("only http:// and https:// URLs are supported: " +
                                   std::string(url));
  }
  std::string_view rest = url.substr(sep + 3);
  size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!out.path.empty() && out.path[0] != '/') out.path = "/" + out.path;
  if (authority.empty() || authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument("URL without a host (or with credentials in it): " +
                                   std::string(url));
  }
  out.port = out.scheme == "https" ? 443 : 80;
  std::string_view host = authority;
  size_t colon = authority.rfind(':');
  size_t bracket = authority.rfind(']');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    std::string_view port = authority.substr(colon + 1);
    int value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value <= 0 || value > 65535) {
      return Status::InvalidArgument("bad port in URL: " + std::string(url));
    }
    out.port = value;
    host = authority.substr(0, colon);
  }
  if (host.empty()) return Status::InvalidArgument("URL without a host: " + std::string(url));
  out.host = std::string(host);
  out.origin = out.scheme + "://" + std::string(authority);
  return out;
}

struct Client::Impl {
  explicit Impl(const std::string& origin) : client(origin) {}
  httplib::Client client;
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Open(const std::string& origin, ClientOptions options) {
  auto url = ParseUrl(origin);
  if (!url) return url.error();
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (url->scheme == "https") {
    return Status::InvalidArgument("this build has no TLS support: cannot reach " + origin);
  }
#endif
  auto impl = std::make_unique<Impl>(url->origin);
  if (!impl->client.is_valid()) return Status::InvalidArgument("cannot use the URL " + origin);
  auto split = [](int ms, auto set) { set(ms / 1000, (ms % 1000) * 1000); };
  httplib::Client& c = impl->client;
  split(options.connect_timeout_ms, [&c](time_t s, time_t us) { c.set_connection_timeout(s, us); });
  split(options.read_timeout_ms, [&c](time_t s, time_t us) { c.set_read_timeout(s, us); });
  split(options.write_timeout_ms, [&c](time_t s, time_t us) { c.set_write_timeout(s, us); });
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // see server.cc: no delayed-ACK wait per request
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  c.enable_server_certificate_verification(true);
#endif
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Result<ClientResponse> Client::Send(const std::string& method, const std::string& path,
                                    const Headers& headers, const std::string& body,
                                    const std::string& content_type,
                                    const std::function<bool(const ClientResponse&)>& on_headers,
                                    const std::function<bool(std::string_view)>& on_body) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  for (const auto& [name, value] : headers) req.headers.emplace(name, value);
  if (!body.empty() || method == "POST") {
    req.body = body;
    req.set_header("Content-Type", content_type);
  }
  ClientResponse out;
  bool stopped_by_us = false;
  bool headers_seen = false;
  req.response_handler = [&](const httplib::Response& res) {
    out.status = res.status;
    for (const auto& [name, value] : res.headers) out.headers.emplace_back(name, value);
    headers_seen = true;
    if (on_headers && !on_headers(out)) {
      stopped_by_us = true;
      return false;
    }
    return true;
  };
  if (on_body) {
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (!on_body(std::string_view(data, n))) {
        stopped_by_us = true;
        return false;
      }
      return true;
    };
  }
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  bool ok = impl_->client.send(req, res, error);
  if (!ok && !(stopped_by_us && headers_seen)) {
    std::string why = "HTTP " + method + " " + path + " failed: " + httplib::to_string(error);
    switch (error) {
      case httplib::Error::Connection:
      case httplib::Error::ConnectionTimeout:
      case httplib::Error::BindIPAddress:
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLLoadingCerts:
      case httplib::Error::SSLServerVerification:
        return Status::Unavailable(why);
      default:
        return Status::Timeout(why);
    }
  }
  if (!on_body) out.body = std::move(res.body);
  return out;
}

void Client::Stop() { impl_->client.stop(); }

}  // namespace taskledger::http
