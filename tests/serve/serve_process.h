// A `taskledger serve` child process for the serve tests: started with the
// given arguments on a free loopback port (--listen 127.0.0.1:0), ready once
// it printed its listening line, talked to over HTTP with keep-alive, and
// stopped with SIGTERM (or killed with SIGKILL) at the end.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "taskledger/http/client.h"

namespace taskledger::serve_test {

struct Reply {
  int status = 0;
  nlohmann::json body;  // discarded when the body is not JSON
  std::string raw;
};

class ServeProcess {
 public:
  // Starts `taskledger serve ARGS... --listen 127.0.0.1:0` and waits for its
  // listening line (REQUIREs it within 20 s).
  explicit ServeProcess(std::vector<std::string> args, bool add_listen = true);
  ~ServeProcess();

  int port() const { return port_; }
  const std::string& listening_line() const { return line_; }
  // POSTs `body` as JSON to `path`; `token` non-empty adds a bearer token.
  Reply Post(const std::string& path, const nlohmann::json& body, const std::string& token = "");
  Reply Send(const std::string& method, const std::string& path, const std::string& body,
             const http::Headers& headers = {});
  void Kill9();
  void Signal(int sig);
  // Reads stderr until it holds `needle` (true) or `ms` pass (false).
  bool WaitForStderr(const std::string& needle, int ms);
  // SIGTERM and wait; returns the exit status (or -1).
  int Stop();
  // What the process wrote to stderr so far (after it stopped: all of it).
  std::string Stderr();

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  int port_ = 0;
  std::string line_, err_;
  std::unique_ptr<http::Client> client_;
};

// Runs `taskledger serve ARGS...` expecting it to exit by itself (bad usage);
// returns the exit code and fills `err` with its stderr.
int RunServeToExit(const std::vector<std::string>& args, std::string& err);

}  // namespace taskledger::serve_test
