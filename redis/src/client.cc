// RedisClient over hiredis (synchronous API): connection set-up, commands,
// pipelines, function calls and the one place where hiredis and server errors
// become Status values. Replies are built by hiredis's reader straight into
// Reply values (internal/reply_reader.h). See taskledger/redis/client.h for
// the contract.
// Not thread-safe per instance (one connection).
#include "taskledger/redis/client.h"

#include <hiredis/hiredis.h>
#include <openssl/ssl.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include "internal/reply_reader.h"
#include "internal/tls.h"

namespace taskledger::internal {
namespace {

// A reply as the reader made it (internal/reply_reader.h): the root Reply, which owns
// every element of it.
using ReplyPtr = std::unique_ptr<Reply>;

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Appends `argv` to `out` as a RESP array of bulk strings (the request form
// every Redis command takes), binary-safe.
template <class Args>
void AppendRequest(std::string& out, const Args& argv) {
  char digits[24];
  auto number = [&](char kind, size_t n) {
    out.push_back(kind);
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), n);
    (void)ec;  // 24 digits hold any size_t
    out.append(digits, end);
    out.append("\r\n", 2);
  };
  number('*', argv.size());
  for (std::string_view arg : argv) {
    number('$', arg.size());
    out.append(arg);
    out.append("\r\n", 2);
  }
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Reply Reply::Integer(int64_t v) {
  Reply r;
  r.type_ = Type::kInteger;
  r.integer_ = v;
  return r;
}
Reply Reply::String(std::string s) {
  Reply r;
  r.type_ = Type::kString;
  r.str_ = std::move(s);
  return r;
}
Reply Reply::StatusText(std::string s) {
  Reply r;
  r.type_ = Type::kStatus;
  r.str_ = std::move(s);
  return r;
}
Reply Reply::Error(std::string s) {
  Reply r;
  r.type_ = Type::kError;
  r.str_ = std::move(s);
  return r;
}
Reply Reply::Array(std::vector<Reply> elements) {
  Reply r;
  r.type_ = Type::kArray;
  r.elements_ = std::move(elements);
  return r;
}

std::string Reply::Describe() const {
  switch (type_) {
    case Type::kNil:
      return "nil";
    case Type::kInteger:
      return "integer " + std::to_string(integer_);
    case Type::kString:
      return "string '" + str_.substr(0, 80) + "'";
    case Type::kStatus:
      return "status " + str_;
    case Type::kError:
      return "error " + str_;
    case Type::kArray:
      return "array of " + std::to_string(elements_.size());
  }
  return "unknown";
}

Status ServerErrorToStatus(const Reply& reply, std::string_view context) {
  const std::string& e = reply.str();
  std::string message = std::string(context) + ": redis: " + e;
  for (std::string_view transient :
       {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY", "OOM"}) {
    if (StartsWith(e, transient)) return Status::Unavailable(std::move(message));
  }
  if (StartsWith(e, "NOAUTH") || StartsWith(e, "WRONGPASS")) {
    return Status::InvalidArgument(std::move(message));
  }
  if (StartsWith(e, "NOPERM")) return Status::FailedPrecondition(std::move(message));
  return Status::Internal(std::move(message));
}

Status LibraryLoadRefused(const Reply& reply, const FunctionLibrary& library) {
  Status st = ServerErrorToStatus(reply, "FUNCTION LOAD " + library.name);
  if (!StartsWith(reply.str(), "NOPERM")) return st;
  return Status::FailedPrecondition(
      st.message() + " (the server does not hold this build's version of the library " +
      library.name +
      ", and this user may not load it: after an upgrade, open the store once as a user "
      "allowed FUNCTION LOAD, see docs/reliability.md)");
}

bool IsFunctionNotFound(const Reply& reply) {
  return reply.is_error() && StartsWith(reply.str(), "ERR Function not found");
}

void RedisClient::ContextDeleter::operator()(redisContext* c) const { redisFree(c); }

RedisClient::RedisClient(RedisEndpoint endpoint, RedisClientOptions options)
    : endpoint_(std::move(endpoint)), options_(options) {}

RedisClient::~RedisClient() = default;

void RedisClient::TlsDeleter::operator()(ssl_st* s) const { SSL_free(s); }
void RedisClient::TlsDeleter::operator()(ssl_ctx_st* c) const { SSL_CTX_free(c); }

void RedisClient::Drop() {
  tls_.reset();  // no close_notify: the socket may be dead, and closing is enough
  context_.reset();
  confirmed_node_.clear();
}

void RedisClient::Disconnect() { Drop(); }

std::string RedisClient::Where() const {
  if (endpoint_.unix_socket) return "unix:" + endpoint_.socket_path;
  return endpoint_.host + ":" + std::to_string(endpoint_.port);
}

Status RedisClient::TransportFailure(std::string_view during) {
  int saved_errno = errno;
  int err = context_ ? context_->err : REDIS_ERR_OTHER;
  std::string detail = context_ ? context_->errstr : "no connection";
  Drop();
  std::string message = "redis " + Where() + ": " + std::string(during) + ": " + detail;
  // hiredis reports an expired SO_RCVTIMEO/SO_SNDTIMEO as an I/O error with
  // errno EAGAIN ("Resource temporarily unavailable"), and an expired connect
  // timeout as ETIMEDOUT.
  bool timed_out = saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
                   saved_errno == ETIMEDOUT ||
                   detail.find("temporarily unavailable") != std::string::npos ||
                   detail.find("timed out") != std::string::npos;
  if (err == REDIS_ERR_IO && timed_out) return Status::Timeout(std::move(message));
  if (err == REDIS_ERR_OOM) return Status::Internal(std::move(message));
  return Status::Unavailable(std::move(message));
}

Status RedisClient::Send(std::string_view during) {
  const char* p = out_.data();
  size_t left = out_.size();
  if (tls_) {
    std::string error;
    if (!TlsWrite(tls_.get(), p, left, error)) {
      int saved = errno;
      context_->err = REDIS_ERR_IO;
      std::snprintf(context_->errstr, sizeof(context_->errstr), "%s", error.c_str());
      errno = saved;
      return TransportFailure(during);
    }
    left = 0;
  }
  while (left > 0) {
    ssize_t n = ::send(context_->fd, p, left, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // Report it the way hiredis reports its own I/O errors, so that
    // TransportFailure maps an expired SO_SNDTIMEO (EAGAIN) to Timeout.
    int saved = n < 0 ? errno : EPIPE;
    context_->err = REDIS_ERR_IO;
    std::snprintf(context_->errstr, sizeof(context_->errstr), "%s", std::strerror(saved));
    errno = saved;
    return TransportFailure(during);
  }
  // A huge pipeline's buffer is not worth keeping on an idle pooled connection.
  if (out_.capacity() > (size_t{4} << 20)) out_ = std::string();
  return Status::Ok();
}

bool RedisClient::DropIfClosed() {
  if (!context_) return false;
  pollfd p{context_->fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) == 0) return false;
  Drop();
  return true;
}

Status RedisClient::Connect() {
  if (context_) return Status::Ok();
  timeval connect_tv = ToTimeval(options_.connect_timeout);
  errno = 0;
  context_.reset(endpoint_.unix_socket
                     ? redisConnectUnixWithTimeout(endpoint_.socket_path.c_str(), connect_tv)
                     : redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, connect_tv));
  if (!context_)
    return Status::Internal("redis " + Where() + ": out of memory allocating a connection");
  if (context_->err) return TransportFailure("connect");
  context_->reader->fn = ReplyObjectFunctions();  // before anything is read on it
  if (redisSetTimeout(context_.get(), ToTimeval(options_.command_timeout)) != REDIS_OK) {
    return TransportFailure("set timeout");
  }
  if (!endpoint_.unix_socket) redisEnableKeepAlive(context_.get());
  if (endpoint_.tls) {
    if (!tls_context_) {
      auto made = MakeTlsContext(endpoint_);
      if (!made) {
        Drop();
        return made.error();
      }
      tls_context_.reset(made->release());
    }
    auto session = TlsHandshake(tls_context_.get(), context_->fd, endpoint_, Where());
    if (!session) {
      Drop();
      return session.error();
    }
    tls_.reset(session->release());
  }

  std::vector<Argv> setup;
  if (!endpoint_.password.empty()) {
    if (endpoint_.user.empty()) {
      setup.push_back({"AUTH", endpoint_.password});
    } else {
      setup.push_back({"AUTH", endpoint_.user, endpoint_.password});
    }
  }
  if (endpoint_.db != 0) setup.push_back({"SELECT", std::to_string(endpoint_.db)});
  // A TLS 1.3 server sends its session tickets after the handshake; one
  // round trip reads them, so an idle connection is not mistaken for one
  // the server wrote to (DropIfClosed).
  if (tls_) setup.push_back({"PING"});
  if (setup.empty()) return Status::Ok();
  auto replies = Pipeline(setup);
  if (!replies) {
    // TLS 1.3 finishes the client's handshake before the server has checked
    // the client's certificate: a refusal shows up as the first exchange
    // failing, so say what it most likely means.
    if (endpoint_.tls && endpoint_.tls_cert_file.empty()) {
      return Status(replies.error().code(),
                    replies.error().message() +
                        " (TLS: the server closed the connection right after the handshake; "
                        "if it requires a client certificate, give ?cert=FILE&key=FILE)");
    }
    return replies.error();
  }
  for (const Reply& r : *replies) {
    if (r.is_error()) {
      Status s = ServerErrorToStatus(r, "redis " + Where() + ": connection set-up");
      Drop();
      return s;
    }
  }
  return Status::Ok();
}

Result<Reply> RedisClient::Command(const Argv& argv) {
  if (Status s = Connect(); !s.ok()) return s;
  out_.clear();
  AppendRequest(out_, argv);
  if (Status s = Send("send"); !s.ok()) return s;
  errno = 0;
  void* raw = nullptr;
  if (ReadOne(&raw) != REDIS_OK || raw == nullptr) {
    return TransportFailure(argv.empty() ? "command" : argv.front());
  }
  ReplyPtr reply(static_cast<Reply*>(raw));
  return std::move(*reply);
}

Result<std::vector<Reply>> RedisClient::Pipeline(const std::vector<Argv>& commands) {
  if (Status s = Connect(); !s.ok()) return s;
  out_.clear();
  for (const Argv& argv : commands) AppendRequest(out_, argv);
  if (Status s = Send("send pipeline"); !s.ok()) return s;
  return ReadReplies(commands.size(), "pipeline");
}

void RedisClient::Queue(std::span<const std::string_view> argv) {
  AppendRequest(queued_, argv);
  ++queued_count_;
  if (queued_.size() >= kStreamBytes) SendQueued();
}

void RedisClient::QueueFCall(std::string_view function, const std::vector<std::string>& keys,
                             const std::vector<std::string>& args) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), keys.size());
  (void)ec;  // 24 digits hold any size_t
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.insert(argv.end(), {"FCALL", function, std::string_view(digits, end - digits)});
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  Queue(argv);
}

void RedisClient::SendQueued() {
  if (queue_error_.ok()) queue_error_ = Connect();
  if (queue_error_.ok()) {
    out_.swap(queued_);
    queue_error_ = Send("send pipeline");
  }
  queued_.clear();
}

Result<std::vector<Reply>> RedisClient::Flush() {
  size_t n = queued_count_;
  queued_count_ = 0;
  SendQueued();
  if (!queue_error_.ok()) return std::exchange(queue_error_, Status::Ok());
  return ReadReplies(n, "pipeline");
}

int RedisClient::ReadOne(void** raw) {
  if (!tls_) return redisGetReply(context_.get(), raw);
  redisReader* reader = context_->reader;
  while (true) {
    if (redisReaderGetReply(reader, raw) != REDIS_OK) {
      context_->err = reader->err;
      std::snprintf(context_->errstr, sizeof(context_->errstr), "%s", reader->errstr);
      return REDIS_ERR;
    }
    if (*raw != nullptr) return REDIS_OK;
    char buf[16 * 1024];
    size_t got = 0;
    std::string error;
    if (!TlsRead(tls_.get(), buf, sizeof(buf), got, error)) {
      int saved = errno;
      context_->err = REDIS_ERR_IO;
      std::snprintf(context_->errstr, sizeof(context_->errstr), "%s", error.c_str());
      errno = saved;
      return REDIS_ERR;
    }
    if (redisReaderFeed(reader, buf, got) != REDIS_OK) {
      context_->err = REDIS_ERR_OOM;
      std::snprintf(context_->errstr, sizeof(context_->errstr), "out of memory");
      return REDIS_ERR;
    }
  }
}

Result<std::vector<Reply>> RedisClient::ReadReplies(size_t n, std::string_view during) {
  errno = 0;
  std::vector<Reply> replies;
  replies.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    void* raw = nullptr;
    if (ReadOne(&raw) != REDIS_OK || raw == nullptr) {
      return TransportFailure(during);
    }
    ReplyPtr reply(static_cast<Reply*>(raw));
    replies.push_back(std::move(*reply));
  }
  return replies;
}

Result<std::vector<Reply>> RedisClient::FlushReloading(const FunctionLibrary& library,
                                                       const std::function<void(size_t)>& requeue) {
  auto replies = Flush();
  if (!replies) return replies;
  std::vector<size_t> missing;
  for (size_t i = 0; i < replies->size(); ++i) {
    if (IsFunctionNotFound((*replies)[i])) missing.push_back(i);
  }
  if (missing.empty()) return replies;
  Queue({"FUNCTION", "LOAD", "REPLACE", library.source});
  for (size_t i : missing) requeue(i);
  auto retried = Flush();
  if (!retried) return retried.error();
  if ((*retried)[0].is_error()) {
    return LibraryLoadRefused((*retried)[0], library);
  }
  for (size_t k = 0; k < missing.size(); ++k) (*replies)[missing[k]] = std::move((*retried)[k + 1]);
  return replies;
}

Result<Reply> RedisClient::FCall(const FunctionLibrary& library, std::string_view function,
                                 const std::vector<std::string>& keys,
                                 const std::vector<std::string>& args) {
  QueueFCall(function, keys, args);
  auto replies = FlushReloading(library, [&](size_t) { QueueFCall(function, keys, args); });
  if (!replies) return replies.error();
  return std::move(replies->front());
}

Status RedisClient::EnsureLoaded(const FunctionLibrary& library) {
  auto listed = Command({"FUNCTION", "LIST", "LIBRARYNAME", library.name, "WITHCODE"});
  if (!listed) return listed.error();
  if (listed->is_error()) return ServerErrorToStatus(*listed, "FUNCTION LIST");
  // Each library is a flat array of field/value pairs; LIBRARYNAME is a
  // pattern, so compare the name exactly.
  for (const Reply& lib : listed->elements()) {
    const auto& kv = lib.elements();
    std::string name, code;
    for (size_t i = 0; i + 1 < kv.size(); i += 2) {
      if (kv[i].str() == "library_name") name = kv[i + 1].str();
      if (kv[i].str() == "library_code") code = kv[i + 1].str();
    }
    if (name == library.name && code == library.source) return Status::Ok();
  }
  auto loaded = Command({"FUNCTION", "LOAD", "REPLACE", library.source});
  if (!loaded) return loaded.error();
  if (loaded->is_error()) return LibraryLoadRefused(*loaded, library);
  return Status::Ok();
}

}  // namespace taskledger::internal
