// Client: HTTP/1.1 requests to one origin (http:// or https://, cpp-httplib
// underneath, TLS through OpenSSL with the system's certificate store), with
// the response body either collected or handed over piece by piece as it
// arrives (for Server-Sent Event streams).
//
// Not thread-safe: one request at a time per Client, except Stop(), which may
// be called from another thread to abort the request in progress. Internal to
// this tree: not installed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "taskledger/base/status.h"
#include "taskledger/http/message.h"

namespace taskledger::http {

// An absolute http(s) URL split up. `origin` is scheme://host[:port].
struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;
  int port = 0;
  std::string path;  // starts with '/'; "/" when the URL has none
  std::string origin;
};
// InvalidArgument for anything but http(s)://host[:port][/path].
Result<Url> ParseUrl(std::string_view url);

struct ClientOptions {
  int connect_timeout_ms = 10'000;
  // Longest silence while a response is read (a stream that goes quiet longer
  // than this ends with Timeout).
  int read_timeout_ms = 300'000;
  int write_timeout_ms = 30'000;
};

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::string body;  // empty when the body went to an on_body callback

  std::string Header(std::string_view name) const { return FindHeader(headers, name); }
};

class Client {
 public:
  // InvalidArgument for a bad origin or https:// without TLS support.
  static Result<std::unique_ptr<Client>> Open(const std::string& origin,
                                              ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends one request. `on_headers` (optional) sees the status and headers
  // before the body; `on_body` (optional) receives the body as it arrives
  // instead of it being collected; either returns false to stop reading.
  // Unavailable: no connection (or TLS session) could be made, so nothing
  // was sent. Timeout: the request went out, or may have, and no complete
  // answer came back (silence past the read timeout, a reset, a stream cut
  // short). An HTTP error status is a response, not an error.
  Result<ClientResponse> Send(const std::string& method, const std::string& path,
                              const Headers& headers, const std::string& body,
                              const std::string& content_type,
                              const std::function<bool(const ClientResponse&)>& on_headers = {},
                              const std::function<bool(std::string_view)>& on_body = {});
  // Aborts the request in progress (from another thread).
  void Stop();

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskledger::http
