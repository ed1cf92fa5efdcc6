// Listener: serves a Service (service.h) over HTTP/1.1 with keep-alive, on
// the tree's HTTP layer (http/, cpp-httplib). Bind() then Serve(), which
// blocks until Stop() (thread-safe, idempotent; a signal handler should only
// set a flag that another thread turns into Stop()).
//
// Limits: bodies over `max_body_bytes` are answered 413 before they are
// read; requests with more than `max_headers` header fields 431; a request
// that takes longer than `read_timeout_ms` to arrive is dropped. Each answered
// request is passed to `access_log` (method, path, status, remote address,
// microseconds): never a header or a body, so no token reaches a log.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "taskledger/base/status.h"
#include "taskledger/serve/service.h"

namespace taskledger::serve {

struct AccessLogLine {
  std::string method, path, remote_addr;
  int status = 0;
  int64_t micros = 0;
};

struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (see Listener::port)
  size_t max_body_bytes = 1u << 20;
  size_t max_headers = 64;
  int worker_threads = 8;
  int read_timeout_ms = 10'000;
  int write_timeout_ms = 10'000;
  std::function<void(const AccessLogLine&)> access_log;
  // HTTPS when set (PEM files); with a client CA, clients must present a
  // certificate it signed. Bind fails with InvalidArgument if they do not load.
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
};

class Listener {
 public:
  // Binds host:port. `service` must outlive the listener. Unavailable if the
  // address cannot be bound; InvalidArgument if the TLS files do not load.
  static Result<std::unique_ptr<Listener>> Bind(Service& service, const ListenerOptions& options);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const;
  Status Serve();
  void Stop();

 private:
  struct Impl;
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskledger::serve
