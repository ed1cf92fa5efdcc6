// TLS for RedisClient (rediss://): an OpenSSL session over the socket hiredis
// connected. hiredis 0.14 cannot carry TLS, so with TLS on, RedisClient
// writes requests with TlsWrite and feeds what TlsRead returns into hiredis'
// reply reader (redisReader); hiredis still connects, parses and owns the fd.
//
// The socket is reached through a BIO of our own that uses send(MSG_NOSIGNAL)
// and recv, so a server that resets the connection gives EPIPE, not SIGPIPE,
// and the socket's SO_RCVTIMEO/SO_SNDTIMEO (the command timeout) bound every
// TLS read and write: an expiry is an error with errno EAGAIN.
//
// Thread safety: a TlsContext is immutable after MakeTlsContext and may be
// shared; a TlsSession belongs to one connection (one thread at a time).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "taskledger/base/status.h"
#include "taskledger/redis/client.h"

struct ssl_st;
struct ssl_ctx_st;

namespace taskledger::internal {

struct TlsContextDeleter {
  void operator()(ssl_ctx_st* c) const;
};
using TlsContext = std::unique_ptr<ssl_ctx_st, TlsContextDeleter>;
struct TlsSessionDeleter {
  void operator()(ssl_st* s) const;
};
using TlsSession = std::unique_ptr<ssl_st, TlsSessionDeleter>;

// A client context for `endpoint`: server certificate verification on, CA
// from endpoint.tls_ca_file (or the system's default CA paths), the client
// certificate chain + key when given. InvalidArgument naming the file and
// OpenSSL's reason when a file cannot be used.
Result<TlsContext> MakeTlsContext(const RedisEndpoint& endpoint);

// Runs the client handshake on connected socket `fd`, sending SNI and
// checking the certificate names endpoint.tls_server_name (or the host;
// an IP address is checked against the certificate's IP SANs).
// FailedPrecondition when the server's certificate is not trusted or does not
// name the server (the message says which, and how to fix it); Unavailable
// for a broken connection or a handshake the server refused (a missing
// client certificate); Timeout when the handshake outlives the socket
// timeouts. `where` is "host:port" for messages.
Result<TlsSession> TlsHandshake(ssl_ctx_st* context, int fd, const RedisEndpoint& endpoint,
                                std::string_view where);

// Writes all `n` bytes. On failure returns false with `error` set and errno
// set (EAGAIN for an expired send timeout).
bool TlsWrite(ssl_st* session, const char* data, size_t n, std::string& error);
// Reads at most `n` bytes (> 0 when it returns true). False with `error`
// and errno set on failure or EOF.
bool TlsRead(ssl_st* session, char* data, size_t n, size_t& got, std::string& error);

}  // namespace taskledger::internal
