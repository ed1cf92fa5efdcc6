// TLS test fixtures for rediss:// tests: a private CA, a server certificate
// for 127.0.0.1 / localhost, a client certificate, and an unrelated CA, all
// made at test time with the openssl CLI; and the redis-server arguments
// that add a TLS port to a RedisServer (support/redis_server.h), whose plain
// port stays for set-up and readiness checks.
//
// SharedTlsRedisUrl() is the TLS counterpart of SharedRedisUrl: the
// rediss://127.0.0.1:P?ca=... URL of one TLS server per test process
// (client certificates not required). Functions throw std::runtime_error on
// failure (tests only). Thread safety: SharedTlsRedisUrl is thread-safe.
#pragma once

#include <string>
#include <vector>

namespace taskledger::testing {

struct TlsFiles {
  std::string dir;
  std::string ca;           // the CA that signed the server and client certificates
  std::string server_cert;  // SAN IP:127.0.0.1, DNS:localhost
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  std::string other_ca;  // a CA that signed neither
};

// Makes the files in a new temp directory (removed by nobody: tiny, in /tmp).
TlsFiles MakeTlsFiles();

// A loopback TCP port that was free a moment ago.
int FreeTlsPort();

// --tls-port P --tls-cert-file ... for redis-server; require_client_cert
// sets --tls-auth-clients yes (else no).
std::vector<std::string> TlsServerArgs(const TlsFiles& files, int tls_port,
                                       bool require_client_cert);

std::string SharedTlsRedisUrl();

}  // namespace taskledger::testing
