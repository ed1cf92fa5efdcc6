// HttpUpstream: an MCP server reached over Streamable HTTP (MCP 2025-03-26 /
// 2025-06-18), bridged onto a pair of pipes so the proxy's loop sees it as it
// sees a child on stdio (Upstream, upstream.h).
//
// Every line the proxy writes is POSTed to the endpoint URL. initialize goes
// first and alone: its answer's Mcp-Session-Id and protocol version are sent
// with everything after. Notifications and responses are POSTed in order on
// the bridge's reader thread (the server answers 202 at once); requests each
// get a thread of their own, so a long tools/call does not hold up a
// cancellation or an answer to the server's own request. A JSON answer or each
// event of an SSE answer comes back to the proxy as one line; after
// initialization a GET stream carries the server's own messages (a 405 means
// the server offers none).
//
// Failures: a request that could not be sent at all (no connection), or that
// the server refused with an HTTP error status, is answered with a JSON-RPC
// error in the request's name. A request that went out and got no complete
// answer may have run: the upstream then ends (the proxy sees its "stdout"
// close, as when a child exits) so the call is recorded as uncertain rather
// than as failed. Stop() ends the session with DELETE (best effort), aborts
// what is in flight and joins every thread.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "internal/upstream.h"
#include "taskledger/base/status.h"
#include "taskledger/http/client.h"

namespace taskledger::mcp::proxy_internal {

class HttpUpstream : public Upstream {
 public:
  // `headers` go with every request (e.g. Authorization). InvalidArgument for
  // a bad URL; the server is not contacted until the first message.
  static Result<std::unique_ptr<HttpUpstream>> Start(const std::string& url, http::Headers headers,
                                                     size_t max_message_bytes,
                                                     std::function<void(std::string)> log);
  ~HttpUpstream() override;
  HttpUpstream(const HttpUpstream&) = delete;
  HttpUpstream& operator=(const HttpUpstream&) = delete;

  int stdin_fd() const override { return proxy_writes_; }
  int stdout_fd() const override { return proxy_reads_; }
  bool Exited() override { return ended_; }
  void Stop(int64_t grace_ms) override;
  int wait_status() const override { return -1; }
  std::string Describe() const override;

 private:
  HttpUpstream() = default;
  void ReadLoop();
  // POSTs one message; `id` is null for notifications and responses.
  void Post(const std::string& line, const nlohmann::json& id, bool initialize);
  void ListenLoop();
  // Hands one JSON-RPC message (any JSON text) to the proxy as one line.
  void Deliver(std::string_view json_text);
  void ReplyError(const nlohmann::json& id, const std::string& message);
  // Ends the upstream: the proxy sees the server gone, with `why`.
  void End(const std::string& why);
  http::Headers RequestHeaders();
  // A client for one request, registered so Stop() can abort it.
  std::shared_ptr<http::Client> NewClient();
  void Release(const std::shared_ptr<http::Client>& client);

  http::Url url_;
  http::Headers headers_;
  size_t max_message_bytes_ = 0;
  std::function<void(std::string)> log_;

  int proxy_writes_ = -1, bridge_reads_ = -1;  // proxy -> bridge
  int bridge_writes_ = -1, proxy_reads_ = -1;  // bridge -> proxy
  std::atomic<bool> ended_{false}, stopping_{false};

  mutable std::mutex mu_;  // guards everything below
  std::string why_;
  std::string session_id_, protocol_version_;
  std::set<std::shared_ptr<http::Client>> active_;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Worker> workers_;
  std::thread reader_, listener_;
  std::mutex write_mu_;  // one line at a time onto bridge_writes_
};

}  // namespace taskledger::mcp::proxy_internal
