// Certificates for TLS tests, made with the openssl CLI, and a shared TLS
// redis-server. See redis_tls.h.
#include "support/redis_tls.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "support/redis_server.h"

namespace taskledger::testing {
namespace {

void Sh(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
    throw std::runtime_error("TLS fixture: failed: " + command);
  }
}

// A CA: key + self-signed certificate.
void MakeCa(const std::string& dir, const std::string& name) {
  Sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + name + " -keyout " + dir +
     "/" + name + ".key -out " + dir + "/" + name + ".pem");
}

// A leaf certificate signed by `ca`, with the given subjectAltName.
void MakeLeaf(const std::string& dir, const std::string& name, const std::string& ca,
              const std::string& san) {
  const std::string base = dir + "/" + name;
  std::ofstream(base + ".ext") << "subjectAltName=" << san << "\n";
  Sh("openssl req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + base + ".key -out " +
     base + ".csr");
  Sh("openssl x509 -req -days 2 -in " + base + ".csr -CA " + dir + "/" + ca + ".pem -CAkey " + dir +
     "/" + ca + ".key -CAcreateserial -extfile " + base + ".ext -out " + base + ".pem");
}

}  // namespace

TlsFiles MakeTlsFiles() {
  char tmpl[] = "/tmp/taskledger-tls-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  TlsFiles f;
  f.dir = tmpl;
  MakeCa(f.dir, "ca");
  MakeCa(f.dir, "other-ca");
  MakeLeaf(f.dir, "server", "ca", "IP:127.0.0.1,DNS:localhost");
  MakeLeaf(f.dir, "client", "ca", "DNS:taskledger-client");
  f.ca = f.dir + "/ca.pem";
  f.other_ca = f.dir + "/other-ca.pem";
  f.server_cert = f.dir + "/server.pem";
  f.server_key = f.dir + "/server.key";
  f.client_cert = f.dir + "/client.pem";
  f.client_key = f.dir + "/client.key";
  return f;
}

int FreeTlsPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("FreeTlsPort: no free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string> TlsServerArgs(const TlsFiles& files, int tls_port,
                                       bool require_client_cert) {
  return {"--tls-port",         std::to_string(tls_port),
          "--tls-cert-file",    files.server_cert,
          "--tls-key-file",     files.server_key,
          "--tls-ca-cert-file", files.ca,
          "--tls-auth-clients", require_client_cert ? "yes" : "no"};
}

std::string SharedTlsRedisUrl() {
  static std::once_flag once;
  static std::unique_ptr<RedisServer> shared;
  static std::string url;
  std::call_once(once, [] {
    TlsFiles files = MakeTlsFiles();
    int port = FreeTlsPort();
    shared =
        RedisServer::Start({.unix_socket = false, .extra_args = TlsServerArgs(files, port, false)});
    url = "rediss://127.0.0.1:" + std::to_string(port) + "?ca=" + files.ca;
  });
  return url;
}

}  // namespace taskledger::testing
