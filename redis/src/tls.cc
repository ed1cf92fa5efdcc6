// OpenSSL glue for rediss:// connections: context set-up (verification, CA,
// client certificate), the handshake with SNI and name checks, and blocking
// reads/writes over a socket BIO that never raises SIGPIPE. See tls.h.
#include "internal/tls.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace taskledger::internal {
namespace {

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

// The BIO's data is a heap int holding the socket (freed by BioDestroy).
int SocketOf(BIO* b) { return *static_cast<int*>(BIO_get_data(b)); }

int BioWrite(BIO* b, const char* data, int n) {
  BIO_clear_retry_flags(b);
  while (true) {
    ssize_t w = ::send(SocketOf(b), data, static_cast<size_t>(n), MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    return static_cast<int>(w);
  }
}

int BioRead(BIO* b, char* data, int n) {
  BIO_clear_retry_flags(b);
  while (true) {
    ssize_t r = ::recv(SocketOf(b), data, static_cast<size_t>(n), 0);
    if (r < 0 && errno == EINTR) continue;
    return static_cast<int>(r);
  }
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int BioCreate(BIO* b) {
  BIO_set_data(b, new int(-1));
  BIO_set_init(b, 1);
  return 1;
}

int BioDestroy(BIO* b) {
  delete static_cast<int*>(BIO_get_data(b));
  BIO_set_data(b, nullptr);
  return 1;
}

BIO_METHOD* SocketMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "taskledger-socket");
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    BIO_meth_set_destroy(m, BioDestroy);
    return m;
  }();
  return method;
}

bool IsIpAddress(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Why an SSL_read/SSL_write/SSL_connect failed, keeping errno for the caller.
std::string IoError(ssl_st* s, int ret) {
  int saved = errno;
  int code = SSL_get_error(s, ret);
  std::string out;
  if (code == SSL_ERROR_ZERO_RETURN) {
    out = "server closed the TLS connection";
  } else if (code == SSL_ERROR_SYSCALL) {
    out = saved != 0 ? std::string(std::strerror(saved)) : "connection closed";
    ERR_clear_error();
  } else {
    out = "TLS error: " + OpenSslErrors();
  }
  errno = saved == 0 ? EPIPE : saved;
  return out;
}

}  // namespace

void TlsContextDeleter::operator()(ssl_ctx_st* c) const { SSL_CTX_free(c); }
void TlsSessionDeleter::operator()(ssl_st* s) const { SSL_free(s); }

Result<TlsContext> MakeTlsContext(const RedisEndpoint& endpoint) {
  ERR_clear_error();
  TlsContext ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return Status::Internal("TLS: cannot create a context: " + OpenSslErrors());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!endpoint.tls_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), endpoint.tls_ca_file.c_str(), nullptr) != 1) {
      return Status::InvalidArgument("TLS: cannot load CA file '" + endpoint.tls_ca_file +
                                     "': " + OpenSslErrors());
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    return Status::InvalidArgument("TLS: cannot load the system CA certificates: " +
                                   OpenSslErrors());
  }
  if (endpoint.tls_cert_file.empty() != endpoint.tls_key_file.empty()) {
    return Status::InvalidArgument("TLS: a client certificate needs both cert= and key=");
  }
  if (!endpoint.tls_cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), endpoint.tls_cert_file.c_str()) != 1) {
      return Status::InvalidArgument("TLS: cannot load client certificate '" +
                                     endpoint.tls_cert_file + "': " + OpenSslErrors());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), endpoint.tls_key_file.c_str(), SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      return Status::InvalidArgument("TLS: cannot use client key '" + endpoint.tls_key_file +
                                     "' with that certificate: " + OpenSslErrors());
    }
  }
  return ctx;
}

Result<TlsSession> TlsHandshake(ssl_ctx_st* context, int fd, const RedisEndpoint& endpoint,
                                std::string_view where) {
  ERR_clear_error();
  TlsSession s(SSL_new(context));
  BIO* bio = s ? BIO_new(SocketMethod()) : nullptr;
  if (!bio) return Status::Internal("TLS: cannot create a session: " + OpenSslErrors());
  *static_cast<int*>(BIO_get_data(bio)) = fd;
  SSL_set_bio(s.get(), bio, bio);
  const std::string& name =
      endpoint.tls_server_name.empty() ? endpoint.host : endpoint.tls_server_name;
  if (IsIpAddress(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s.get()), name.c_str());
  } else {
    SSL_set_tlsext_host_name(s.get(), name.c_str());
    SSL_set1_host(s.get(), name.c_str());
  }
  std::string prefix = "redis " + std::string(where) + ": TLS handshake: ";
  errno = 0;
  int ret = SSL_connect(s.get());
  if (ret == 1) return s;
  long verify = SSL_get_verify_result(s.get());
  if (verify != X509_V_OK) {
    ERR_clear_error();
    return Status::FailedPrecondition(
        prefix + "server certificate not accepted: " + X509_verify_cert_error_string(verify) +
        " (name checked: '" + name +
        "'; give the CA that signed it with ?ca=FILE, or the name it carries with ?sni=NAME)");
  }
  std::string detail = IoError(s.get(), ret);
  if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Timeout(prefix + detail);
  return Status::Unavailable(prefix + detail +
                             (endpoint.tls_cert_file.empty()
                                  ? " (does the server require a client certificate? "
                                    "give ?cert=FILE&key=FILE)"
                                  : ""));
}

bool TlsWrite(ssl_st* session, const char* data, size_t n, std::string& error) {
  while (n > 0) {
    ERR_clear_error();
    errno = 0;
    size_t written = 0;
    int ret = SSL_write_ex(session, data, n, &written);
    if (ret != 1) {
      error = IoError(session, ret);
      return false;
    }
    data += written;
    n -= written;
  }
  return true;
}

bool TlsRead(ssl_st* session, char* data, size_t n, size_t& got, std::string& error) {
  ERR_clear_error();
  errno = 0;
  int ret = SSL_read_ex(session, data, n, &got);
  if (ret == 1) return true;
  error = IoError(session, ret);
  return false;
}

}  // namespace taskledger::internal
