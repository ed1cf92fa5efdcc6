// Server: an HTTP/1.1 server (cpp-httplib underneath) that routes requests by
// method and exact path to handlers returning plain Response values.
//
// Contract: handlers run on a pool of `worker_threads` threads, several at a
// time, so what they share must be synchronised; a streamed response holds
// its worker until its stream function returns, so long-lived streams need
// workers to spare. A request body larger than `max_body_bytes` is answered
// 413 without reaching a handler; an unknown path 404 and a known path with
// another method 405; a handler that throws 500. Bind() then Serve() (which
// blocks); Stop() may be called from any thread and makes Serve() return.
// Internal to this tree: not installed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "taskledger/base/status.h"
#include "taskledger/http/message.h"

namespace taskledger::http {

using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  size_t max_body_bytes = 16u << 20;
  int worker_threads = 16;
  // How long a request may take to arrive, and a response to be accepted.
  int read_timeout_ms = 30'000;
  int write_timeout_ms = 30'000;
};

// HTTPS: PEM certificate chain and private key files. With a client CA file
// too, every client must present a certificate it signed (the handshake
// fails otherwise). Server::Bind fails with InvalidArgument if they do not load.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

class Server {
 public:
  explicit Server(ServerOptions options = {});
  // An HTTPS server (see TlsOptions).
  Server(ServerOptions options, TlsOptions tls);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers `handler` for `method` on `path` (exact match). Before Serve().
  void Route(const std::string& method, const std::string& path, Handler handler);
  // Binds `host`:`port` (port 0: any free port) and returns the port bound.
  // Unavailable if the address cannot be bound; InvalidArgument if the TLS
  // files do not load.
  Result<int> Bind(const std::string& host, int port);
  // Accepts and serves requests until Stop(). REQUIRES: Bind() succeeded.
  Status Serve();
  // Makes Serve() return; thread-safe, idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskledger::http
