// http::Server over cpp-httplib (see taskledger/http/server.h): routes by
// exact path, our own method dispatch (so a known path answers 405 with an
// Allow header), streamed bodies through chunked content providers.
#include "taskledger/http/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace taskledger::http {
namespace {

constexpr int kListenBacklog = 1024;

std::string RegexEscape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '_' && c != '-') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

class SinkWriter : public BodyWriter {
 public:
  explicit SinkWriter(httplib::DataSink& sink) : sink_(sink) {}
  bool Write(std::string_view data) override {
    if (!ok_) return false;
    ok_ = sink_.write(data.data(), data.size());
    return ok_;
  }

 private:
  httplib::DataSink& sink_;
  bool ok_ = true;
};

void Fill(const Response& from, httplib::Response& to) {
  to.status = from.status;
  for (const auto& [name, value] : from.headers) to.set_header(name, value);
  if (from.stream) {
    auto stream = from.stream;
    to.set_chunked_content_provider(from.content_type,
                                    [stream](size_t /*offset*/, httplib::DataSink& sink) {
                                      SinkWriter writer(sink);
                                      stream(writer);
                                      sink.done();
                                      return true;
                                    });
  } else if (!from.body.empty() || from.status != 204) {
    to.set_content(from.body, from.content_type);
  }
}

}  // namespace

// A plain server, or a TLS one when the options name a certificate.
std::unique_ptr<httplib::Server> MakeServer(const TlsOptions& o) {
  if (o.cert_file.empty()) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>(
      o.cert_file.c_str(), o.key_file.c_str(),
      o.client_ca_file.empty() ? nullptr : o.client_ca_file.c_str());
}

struct Server::Impl {
  Impl(const ServerOptions& o, TlsOptions t)
      : options(o), tls(std::move(t)), owned(MakeServer(tls)), server(*owned) {}
  ServerOptions options;
  TlsOptions tls;
  std::unique_ptr<httplib::Server> owned;
  httplib::Server& server;
  // httplib closes its listening socket only in a stop() that reaches a
  // running listen loop, so Serve() and Stop() meet under `mu`, and a bound
  // socket is always served (if only for a moment) before it is let go.
  std::mutex mu;
  bool bound = false, serving = false, stopped = false;
  std::atomic<bool> finished{false};  // the listen loop has returned
  int listen_fd = -1;                 // the socket Bind bound last (set by socket options)

  // Runs the listen loop just long enough to close the bound socket.
  void CloseUnserved() {
    std::thread loop([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.stop();
    loop.join();
    finished = true;
  }
  // path -> method -> handler
  std::map<std::string, std::map<std::string, Handler>> routes;

  void Dispatch(const std::string& path, const httplib::Request& req, httplib::Response& res) {
    const auto& by_method = routes.at(path);
    auto it = by_method.find(req.method);
    if (it == by_method.end()) {
      std::string allow;
      for (const auto& [method, handler] : by_method) allow += (allow.empty() ? "" : ", ") + method;
      Response r = Response::Text(405, "method not allowed\n");
      r.headers.emplace_back("Allow", allow);
      Fill(r, res);
      return;
    }
    Request request;
    request.method = req.method;
    request.path = req.path;
    request.body = req.body;
    request.remote_addr = req.remote_addr;
    request.headers.reserve(req.headers.size());
    for (const auto& [name, value] : req.headers) request.headers.emplace_back(name, value);
    Fill(it->second(request), res);
  }
};

Server::Server(ServerOptions options) : Server(options, TlsOptions{}) {}

Server::Server(ServerOptions options, TlsOptions tls)
    : impl_(std::make_unique<Impl>(options, std::move(tls))) {
  httplib::Server& s = impl_->server;
  int threads = options.worker_threads > 0 ? options.worker_threads : 1;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_payload_max_length(options.max_body_bytes);
  // Headers and body go out in separate writes: with Nagle on, the second
  // waits for the peer's delayed ACK (~40 ms per request).
  s.set_tcp_nodelay(true);
  // httplib's default closes a kept-alive connection after 5 requests.
  s.set_keep_alive_max_count(1000);
  Impl* impl = impl_.get();
  s.set_socket_options([impl](socket_t sock) {
    httplib::default_socket_options(sock);
    impl->listen_fd = sock;
  });
  s.set_read_timeout(options.read_timeout_ms / 1000, (options.read_timeout_ms % 1000) * 1000);
  s.set_write_timeout(options.write_timeout_ms / 1000, (options.write_timeout_ms % 1000) * 1000);
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr& /*error*/) {
        Fill(Response::Text(500, "internal error\n"), res);
      });
}

Server::~Server() {
  Stop();
  bool unserved = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    unserved = impl_->bound && !impl_->serving;
    impl_->serving = true;
  }
  if (unserved) impl_->CloseUnserved();
}

void Server::Route(const std::string& method, const std::string& path, Handler handler) {
  bool first = impl_->routes.find(path) == impl_->routes.end();
  impl_->routes[path][method] = std::move(handler);
  if (!first) return;
  Impl* impl = impl_.get();
  auto dispatch = [impl, path](const httplib::Request& req, httplib::Response& res) {
    impl->Dispatch(path, req, res);
  };
  std::string pattern = RegexEscape(path);
  httplib::Server& s = impl_->server;
  s.Get(pattern, dispatch);
  s.Post(pattern, dispatch);
  s.Put(pattern, dispatch);
  s.Patch(pattern, dispatch);
  s.Delete(pattern, dispatch);
  s.Options(pattern, dispatch);
}

Result<int> Server::Bind(const std::string& host, int port) {
  if (port < 0 || port > 65535) return Status::InvalidArgument("port out of range");
  httplib::Server& s = impl_->server;
  if (!s.is_valid()) {
    // An SSLServer whose certificate, key or client CA did not load.
    const TlsOptions& t = impl_->tls;
    return Status::InvalidArgument(
        "cannot use the TLS certificate " + t.cert_file + " with the key " + t.key_file +
        (t.client_ca_file.empty() ? std::string() : " and the client CA " + t.client_ca_file));
  }
  int bound = port;
  if (port == 0) {
    bound = s.bind_to_any_port(host);
  } else if (!s.bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound >= 0) {
    // Debian's libcpp-httplib listens with a backlog of 5: a burst of
    // clients connecting at once (a fleet restarting) overflows it and some
    // connections fail. listen() again on the bound socket raises it.
    if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, kListenBacklog);
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->bound = true;
  } else {
    return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                               std::strerror(errno));
  }
  return bound;
}

Status Server::Serve() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->bound || impl_->serving) return Status::FailedPrecondition("not bound, or served");
    impl_->serving = true;
    if (impl_->stopped) {
      impl_->CloseUnserved();
      return Status::Ok();
    }
  }
  bool ok = impl_->server.listen_after_bind();
  impl_->finished = true;
  return ok ? Status::Ok() : Status::Unavailable("the HTTP server failed");
}

void Server::Stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stopped = true;
  if (!impl_->serving || impl_->finished) return;
  // Serve() may not have reached its loop yet: stop() only works once it has.
  while (!impl_->server.is_running() && !impl_->finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  impl_->server.stop();
}

}  // namespace taskledger::http
