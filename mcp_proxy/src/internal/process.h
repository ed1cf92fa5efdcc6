// ServerProcess: the MCP server the proxy runs as its child, with a pipe on
// its stdin and one on its stdout (stderr is inherited, so the server's logs
// go where the proxy's go).
//
// The child runs in its own process group, so stopping it reaches whatever it
// started (an `npx` wrapper's node, a shell's children); and on Linux it asks
// the kernel for SIGKILL if the proxy dies, so a killed proxy does not leave
// it running (elsewhere see internal/platform.h). Stop() always ends with
// the child reaped. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "internal/upstream.h"
#include "taskledger/base/status.h"

namespace taskledger::mcp::proxy_internal {

class ServerProcess : public Upstream {
 public:
  // Forks and execs `argv` (argv[0] looked up in PATH). Unavailable, naming
  // the program and errno's text, if it cannot be started.
  static Result<std::unique_ptr<ServerProcess>> Start(const std::vector<std::string>& argv);
  ~ServerProcess() override;  // Stop(0) if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Non-blocking descriptors (close-on-exec); -1 once closed.
  int stdin_fd() const override { return stdin_fd_; }
  int stdout_fd() const override { return stdout_fd_; }
  void CloseStdin();
  void CloseStdout();

  // True once the child has been reaped (checks without blocking).
  bool Exited() override;
  // Closes stdin, waits up to grace_ms for the child to exit, then sends
  // SIGTERM to its group and waits grace_ms again, then SIGKILL; reaps it.
  void Stop(int64_t grace_ms) override;
  // The waitpid status; meaningful once Exited().
  int wait_status() const override { return wait_status_; }
  // "exited with status 3", "killed by signal 9 (Killed)".
  std::string Describe() const override;

 private:
  ServerProcess(pid_t pid, int in, int out) : pid_(pid), stdin_fd_(in), stdout_fd_(out) {}
  bool WaitFor(int64_t ms);

  pid_t pid_;
  int stdin_fd_;
  int stdout_fd_;
  bool reaped_ = false;
  int wait_status_ = -1;
};

// Sets O_NONBLOCK on `fd`; returns the previous flags (or -1).
int SetNonBlocking(int fd);

}  // namespace taskledger::mcp::proxy_internal
