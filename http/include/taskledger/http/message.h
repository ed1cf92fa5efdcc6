// HTTP requests and responses as plain values, so that no httplib type
// appears outside http/src (Debian's httplib is built with OpenSSL, zlib and
// Brotli support, and every translation unit that includes httplib.h must
// agree on those macros; only this component's sources include it).
//
// Header names compare case-insensitively (RFC 9110). Internal to this tree:
// not installed.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskledger::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The first value of header `name` in `headers` (case-insensitive), or "".
std::string FindHeader(const Headers& headers, std::string_view name);
bool HasHeader(const Headers& headers, std::string_view name);

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  Headers headers;
  std::string body;
  std::string remote_addr;

  std::string Header(std::string_view name) const { return FindHeader(headers, name); }
  bool Has(std::string_view name) const { return HasHeader(headers, name); }
};

// Receives the pieces of a streamed response body. Write() returns false once
// the peer is gone; the stream should then end.
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  virtual bool Write(std::string_view data) = 0;
};

struct Response {
  int status = 200;
  Headers headers;
  std::string content_type = "application/json";
  std::string body;
  // When set, the body is streamed instead (chunked transfer coding): the
  // server calls it once, on the worker thread of the request, and the
  // response ends when it returns. It may block (e.g. waiting for the next
  // Server-Sent Event); it must return once Write() fails.
  std::function<void(BodyWriter&)> stream;

  static Response Text(int status, std::string text) {
    Response r;
    r.status = status;
    r.content_type = "text/plain; charset=utf-8";
    r.body = std::move(text);
    return r;
  }
};

}  // namespace taskledger::http
