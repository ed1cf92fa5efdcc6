// RedisClient: one synchronous connection to a Redis server, and the only code
// in taskledger that touches hiredis.
//
// Everything a store needs from Redis goes through here: URL parsing, connect
// and command timeouts, AUTH (with an ACL user) and SELECT, single commands,
// pipelines (many commands, one round trip), and calling functions of a Redis
// Functions library that is (re)loaded when the server lacks it. Replies come
// back as the plain value type Reply, so no hiredis type leaves this file pair.
//
// Errors are values: transport failures (refused, reset, EOF) are Unavailable,
// a command that outlives the command timeout is Timeout, and error replies
// from the server are Reply values of type kError that a caller can map with
// ServerErrorToStatus. After any transport failure the connection is dropped
// (its stream may hold a late reply), and the NEXT call reconnects; a failed
// call is never retried here, because only the caller knows whether a retry
// is safe.
//
// Thread safety: a RedisClient is NOT thread-safe (one connection, one
// in-flight exchange). Use one per thread, or a pool. Distinct clients are
// independent.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "taskledger/base/status.h"

struct redisContext;  // hiredis; only client.cc sees the definition
struct ssl_st;        // OpenSSL; only client.cc and tls.cc see it
struct ssl_ctx_st;

namespace taskledger::internal {

// Where and how to connect, parsed from a URL.
struct RedisEndpoint {
  bool unix_socket = false;
  std::string host;         // TCP only
  int port = 6379;          // TCP only
  std::string socket_path;  // unix only
  std::string user;         // empty: the default user (AUTH with password only)
  std::string password;     // empty: no AUTH
  int db = 0;               // SELECTed after connect when non-zero
  // TLS (rediss://): the server's certificate is always verified.
  bool tls = false;
  std::string tls_ca_file;      // ?ca=: PEM CA bundle; empty: the system's CAs
  std::string tls_cert_file;    // ?cert=: PEM client certificate (chain)
  std::string tls_key_file;     // ?key=: PEM key of tls_cert_file
  std::string tls_server_name;  // ?sni=: SNI + name checked; empty: host
};

// Accepts redis://[[user]:password@]host[:port][/db],
// rediss://...same...[?ca=FILE&cert=FILE&key=FILE&sni=NAME] (TLS; each
// option optional, values percent-decoded) and unix:///path/to/socket[?db=N];
// user and password may be percent-encoded.
// InvalidArgument, with what is wrong, for anything else.
Result<RedisEndpoint> ParseRedisUrl(std::string_view url);

// Accepts redis+cluster://[[user]:password@]host:port[,host:port...]: the
// seed nodes of a Redis Cluster, sharing the credentials (a cluster has only
// database 0, so no /db); rediss+cluster://...[?ca=...] is the same over TLS,
// every node with the same TLS options. InvalidArgument for anything else.
Result<std::vector<RedisEndpoint>> ParseClusterUrl(std::string_view url);
inline constexpr std::string_view kClusterScheme = "redis+cluster://";
inline constexpr std::string_view kTlsClusterScheme = "rediss+cluster://";
bool IsClusterUrl(std::string_view url);

// The durability settings a redis:// or redis+cluster:// URL (or rediss
// form) may carry as a query: ?replicas=N[&replica_timeout_ms=T]
// (RedisOptions::replicas and replica_timeout). Removes them from `url` and
// sets what they name, leaving the others; the TLS options of a rediss URL
// (ca, cert, key, sni) stay in the URL. InvalidArgument for another key or a
// bad number.
// unix:// URLs (whose query is ?db=N) are left alone.
Status TakeDurabilityQuery(std::string& url, uint32_t& replicas,
                           std::chrono::milliseconds& replica_timeout);

// A server reply, as the connection read it. Strings are binary-safe.
class Reply {
 public:
  enum class Type { kNil, kInteger, kString, kStatus, kError, kArray };

  Reply() = default;  // nil
  static Reply Integer(int64_t v);
  static Reply String(std::string s);
  static Reply StatusText(std::string s);  // a +OK style status line
  static Reply Error(std::string s);       // a -ERR style error line
  static Reply Array(std::vector<Reply> elements);

  Type type() const { return type_; }
  bool is_nil() const { return type_ == Type::kNil; }
  bool is_error() const { return type_ == Type::kError; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_integer() const { return type_ == Type::kInteger; }
  bool is_array() const { return type_ == Type::kArray; }
  // REQUIRES: is_integer().
  int64_t integer() const { return integer_; }
  // The text of a string, status or error reply; empty for other types.
  const std::string& str() const { return str_; }
  // The elements of an array reply; empty for other types.
  const std::vector<Reply>& elements() const { return elements_; }
  // A short human-readable rendering for error messages.
  std::string Describe() const;

 private:
  friend struct ReplyBuilder;  // reply_reader.cc: hiredis's reader builds replies in place
  Type type_ = Type::kNil;
  int64_t integer_ = 0;
  std::string str_;
  std::vector<Reply> elements_;
};

// One command: its name and arguments, each binary-safe.
using Argv = std::vector<std::string>;

// Maps an error reply to a Status: LOADING/BUSY/MASTERDOWN/TRYAGAIN/
// CLUSTERDOWN/READONLY/OOM -> Unavailable (the server cannot serve now),
// NOAUTH/WRONGPASS -> InvalidArgument (the URL's credentials are wrong),
// NOPERM -> FailedPrecondition (the ACL user lacks a permission), anything
// else -> Internal. `context` prefixes the message ("commit acme/c1").
// REQUIRES: reply.is_error().
Status ServerErrorToStatus(const Reply& reply, std::string_view context);

// True for the error FCALL returns when the named function is not loaded.
bool IsFunctionNotFound(const Reply& reply);

// A Redis Functions library: its name (as in the "#!lua name=..." shebang)
// and full source. The source text identifies the version: a server holding
// different code under the same name is brought up to date by EnsureLoaded.
struct FunctionLibrary {
  std::string name;
  std::string source;
};

// The Status for a FUNCTION LOAD of `library` that the server refused, as
// ServerErrorToStatus words it. A NOPERM (the usual case after an upgrade
// changed the library, opened by a tenant user that may not load functions)
// also says what to do: have a user allowed FUNCTION LOAD open the store once.
// REQUIRES: reply.is_error().
Status LibraryLoadRefused(const Reply& reply, const FunctionLibrary& library);

struct RedisClientOptions {
  std::chrono::milliseconds connect_timeout{1000};
  // Bounds each blocking read or write of a command; a command that takes
  // longer yields Timeout and drops the connection.
  std::chrono::milliseconds command_timeout{1000};
};

class RedisClient {
 public:
  // Does not connect; the first call does (see Connect).
  RedisClient(RedisEndpoint endpoint, RedisClientOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Connects (if not connected), authenticates and selects the database.
  // Unavailable (refused, unreachable), Timeout (connect timeout), or the
  // mapped AUTH/SELECT error. Every other call invokes it implicitly.
  Status Connect();
  bool connected() const { return context_ != nullptr; }
  // For an idle connection (nothing in flight): true if the server closed it
  // or sent something unasked (it is then dropped; the next call
  // reconnects). One poll(2) with no wait. Lets a caller that must not send
  // twice find a dead server before sending, not after.
  bool DropIfClosed();
  // Closes the connection; the next call reconnects.
  void Disconnect();
  // The cluster node id this connection was confirmed to reach
  // (RedisRouter::ConnectTo); empty until then, and again once the
  // connection is dropped: a new connection may reach another server.
  const std::string& confirmed_node() const { return confirmed_node_; }
  void set_confirmed_node(std::string id) { confirmed_node_ = std::move(id); }

  // Sends one command and waits for its reply. A server error reply is a
  // value (Reply::is_error), not a failed Result.
  Result<Reply> Command(const Argv& argv);
  // Sends all commands in one write and reads all replies: one round trip.
  // The replies are in command order, one per command. If the connection
  // fails part way, the whole call fails (some commands may have run).
  Result<std::vector<Reply>> Pipeline(const std::vector<Argv>& commands);

  // A pipeline without building Argv copies, for hot paths: each Queue()
  // writes one command straight into the request buffer (the arguments are
  // copied once, there); Flush() sends what is still queued and reads one
  // reply per queued command, in order. Same failure rules as Pipeline.
  // Once kStreamBytes are queued, Queue() already sends them, so the server
  // works on the start of a long pipeline while the caller still builds the
  // rest: a caller that queues must always Flush, which also reports a
  // failed early send. The queue is emptied by Flush, whatever its outcome.
  static constexpr size_t kStreamBytes = 64 * 1024;
  void Queue(std::span<const std::string_view> argv);
  void Queue(std::initializer_list<std::string_view> argv) {
    Queue(std::span<const std::string_view>(argv.begin(), argv.size()));
  }
  // Queue() of "FCALL function numkeys keys... args...", written from the
  // caller's strings without copying them first.
  void QueueFCall(std::string_view function, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args);
  size_t queued() const { return queued_count_; }
  // Sends what is queued now, without waiting: Flush() then reads the
  // replies. Lets a caller put pipelines to several servers in flight at
  // once before reading any of them. A failure is reported by Flush.
  void Push() { SendQueued(); }
  Result<std::vector<Reply>> Flush();

  // Flush() for a pipeline of FCALLs into `library`: the commands the server
  // answers "function not found" (never loaded, or FUNCTION FLUSH) are sent
  // once more, after FUNCTION LOAD REPLACE of `library`, in a second round
  // trip, and their replies take the place of the refusals. requeue(i) must
  // Queue() command i of the flushed pipeline again (exactly one command).
  // Safe: a call that found no function ran nothing.
  Result<std::vector<Reply>> FlushReloading(const FunctionLibrary& library,
                                            const std::function<void(size_t)>& requeue);
  // One FCALL of function with keys and args, through FlushReloading.
  // REQUIRES: nothing queued.
  Result<Reply> FCall(const FunctionLibrary& library, std::string_view function,
                      const std::vector<std::string>& keys, const std::vector<std::string>& args);
  // Loads `library` unless the server already holds exactly this source
  // under its name (FUNCTION LIST ... WITHCODE), so stale code is replaced.
  Status EnsureLoaded(const FunctionLibrary& library);

  const RedisEndpoint& endpoint() const { return endpoint_; }
  // "127.0.0.1:6379" or "unix:/path": for error messages (never the password).
  std::string Where() const;

 private:
  // Converts the context's error into a Status and drops the connection.
  Status TransportFailure(std::string_view during);
  // Drops the connection (TLS session first, then the socket).
  void Drop();
  // One reply from the connection (through TLS when on), hiredis-style:
  // REDIS_OK with *raw set, or REDIS_ERR with context_->err/errstr set.
  int ReadOne(void** raw);
  // Writes all of out_ to the socket. Requests are written here with
  // send(MSG_NOSIGNAL), never by hiredis (its output buffer stays empty, so
  // redisGetReply only reads): a write to a connection the server reset
  // fails with EPIPE instead of raising SIGPIPE, at no per-call cost.
  Status Send(std::string_view during);
  // Sends queued_ now (see Queue); a failure is kept for Flush, and no
  // later part of that pipeline is sent.
  void SendQueued();
  // Reads `n` replies of what Send wrote.
  Result<std::vector<Reply>> ReadReplies(size_t n, std::string_view during);

  RedisEndpoint endpoint_;
  RedisClientOptions options_;
  struct ContextDeleter {
    void operator()(redisContext* c) const;  // redisFree
  };
  std::unique_ptr<redisContext, ContextDeleter> context_;  // null: not connected
  std::string confirmed_node_;                             // see confirmed_node()
  struct TlsDeleter {
    void operator()(ssl_st* s) const;
    void operator()(ssl_ctx_st* c) const;
  };
  std::unique_ptr<ssl_ctx_st, TlsDeleter> tls_context_;  // made at the first TLS connect
  std::unique_ptr<ssl_st, TlsDeleter> tls_;              // non-null: context_ is over TLS
  std::string out_;     // the requests being sent, RESP-encoded; reused across calls
  std::string queued_;  // Queue()d requests not yet flushed (Connect may use out_)
  size_t queued_count_ = 0;
  Status queue_error_;  // a failed SendQueued of the pipeline being queued
};

}  // namespace taskledger::internal
