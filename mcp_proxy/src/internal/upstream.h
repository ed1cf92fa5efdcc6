// Upstream: the MCP server the proxy relays to, seen as a pair of
// newline-delimited JSON-RPC descriptors, whatever its transport: a child
// process on stdio (ServerProcess, process.h) or a Streamable HTTP endpoint
// bridged onto pipes (HttpUpstream, http_upstream.h). The proxy's loop and
// its gating never know which. Not thread-safe (the proxy's thread only).
#pragma once

#include <cstdint>
#include <string>

namespace taskledger::mcp::proxy_internal {

class Upstream {
 public:
  virtual ~Upstream() = default;
  // Non-blocking descriptors: the proxy writes the server's input to
  // stdin_fd() and reads its output from stdout_fd(); -1 once closed.
  virtual int stdin_fd() const = 0;
  virtual int stdout_fd() const = 0;
  // True once the server is gone for good (checks without blocking).
  virtual bool Exited() = 0;
  // Ends the server (for a child: closes stdin, waits up to grace_ms, then
  // signals it); afterwards Exited() is true.
  virtual void Stop(int64_t grace_ms) = 0;
  // A waitpid status for a child process; -1 when there is none.
  virtual int wait_status() const = 0;
  // How it ended, to follow "the MCP server ": "exited with status 3".
  virtual std::string Describe() const = 0;
};

}  // namespace taskledger::mcp::proxy_internal
