// Listener (taskledger/serve/listener.h): every Service route registered on
// an http::Server; requests and responses copied across as plain values.
#include "taskledger/serve/listener.h"

#include <chrono>

#include "taskledger/http/server.h"

namespace taskledger::serve {

struct Listener::Impl {
  Impl(http::ServerOptions o, http::TlsOptions tls) : server(o, std::move(tls)) {}
  http::Server server;
  int port = 0;
};

Listener::Listener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Listener::~Listener() { Stop(); }

Result<std::unique_ptr<Listener>> Listener::Bind(Service& service, const ListenerOptions& options) {
  http::ServerOptions so;
  so.max_body_bytes = options.max_body_bytes;
  so.worker_threads = options.worker_threads;
  so.read_timeout_ms = options.read_timeout_ms;
  so.write_timeout_ms = options.write_timeout_ms;
  http::TlsOptions tls{options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file};
  auto impl = std::make_unique<Impl>(so, std::move(tls));
  auto log = options.access_log;
  const size_t max_headers = options.max_headers;
  for (const RouteInfo& route : Service::Routes()) {
    impl->server.Route(route.method, route.path,
                       [&service, log, max_headers](const http::Request& req) {
                         const auto start = std::chrono::steady_clock::now();
                         http::Response res;
                         if (req.headers.size() > max_headers) {
                           res.status = 431;
                           res.body = R"({"error":{"code":"too_many_headers","message":)"
                                      R"("more header fields than this server accepts"}})";
                         } else {
                           ServeRequest sr{req.method, req.path, req.headers, req.body};
                           ServeResponse out = service.Handle(sr);
                           res.status = out.status;
                           res.content_type = out.content_type;
                           res.body = std::move(out.body);
                         }
                         if (log) {
                           auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::steady_clock::now() - start)
                                         .count();
                           log(AccessLogLine{req.method, req.path, req.remote_addr, res.status,
                                             static_cast<int64_t>(us)});
                         }
                         return res;
                       });
  }
  auto port = impl->server.Bind(options.host, options.port);
  if (!port) return port.error();
  impl->port = *port;
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

int Listener::port() const { return impl_->port; }
Status Listener::Serve() { return impl_->server.Serve(); }
void Listener::Stop() { impl_->server.Stop(); }

}  // namespace taskledger::serve
