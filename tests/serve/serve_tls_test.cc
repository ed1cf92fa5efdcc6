// `taskledger serve --tls-cert/--tls-key [--tls-client-ca]`: HTTPS with a
// certificate from a private CA (support/redis_tls.h makes the files with
// the openssl CLI), checked with curl: the CA-verified request is answered,
// plain HTTP to the TLS port is not, a required client certificate is
// enforced, and unusable files stop the start with exit 2.
#include <stdio.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <string>

#include "serve_process.h"
#include "support/redis_tls.h"

namespace taskledger::serve_test {
namespace {

// Runs `command` with a shell; returns its exit status and fills `out`.
int Shell(const std::string& command, std::string& out) {
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = ::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("serve: HTTPS with a certificate, and client certificates when required", "[serve]") {
  testing::TlsFiles tls = testing::MakeTlsFiles();
  {
    ServeProcess s({"--tls-cert", tls.server_cert, "--tls-key", tls.server_key});
    CHECK(s.listening_line().find("https://127.0.0.1:") != std::string::npos);
    const std::string url = "https://127.0.0.1:" + std::to_string(s.port());
    std::string out;
    CHECK(Shell("curl -sS --max-time 10 --cacert " + tls.ca + " " + url + "/healthz", out) == 0);
    CHECK(out == R"({"status":"ok"})");
    out.clear();
    CHECK(Shell("curl -sS --max-time 10 --cacert " + tls.ca + " -d '{\"conversation\":\"t\"}' " +
                    url + "/v1/versions",
                out) == 0);
    CHECK(out.find("\"head\":0") != std::string::npos);
    out.clear();
    CHECK(Shell("curl -sS --max-time 10 --cacert " + tls.other_ca + " " + url + "/healthz", out) !=
          0);  // not the CA that signed it
    out.clear();
    CHECK(Shell("curl -sS --max-time 10 http://127.0.0.1:" + std::to_string(s.port()) + "/healthz",
                out) != 0);  // plain HTTP on the TLS port
  }
  {
    ServeProcess s(
        {"--tls-cert", tls.server_cert, "--tls-key", tls.server_key, "--tls-client-ca", tls.ca});
    const std::string url = "https://127.0.0.1:" + std::to_string(s.port()) + "/healthz";
    std::string out;
    CHECK(Shell("curl -sS --max-time 10 --cacert " + tls.ca + " " + url, out) != 0);
    out.clear();
    CHECK(Shell("curl -sS --max-time 10 --cacert " + tls.ca + " --cert " + tls.client_cert +
                    " --key " + tls.client_key + " " + url,
                out) == 0);
    CHECK(out == R"({"status":"ok"})");
  }
  std::string err;
  CHECK(RunServeToExit({"--listen", "127.0.0.1:0", "--tls-cert", tls.ca + ".missing", "--tls-key",
                        tls.server_key},
                       err) == 2);
  CHECK(err.find("TLS certificate") != std::string::npos);
  err.clear();
  CHECK(RunServeToExit({"--listen", "127.0.0.1:0", "--tls-cert", tls.server_cert}, err) == 2);
  CHECK(err.find("--tls-key") != std::string::npos);
}

}  // namespace taskledger::serve_test
