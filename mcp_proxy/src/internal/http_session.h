// SessionBridge: one MCP session of the HTTP listener (http_listener.h). It
// runs a GatingProxy on a thread of its own, its client side one end of a
// socketpair, and sorts what the proxy says back: the answer to a request
// goes to the HTTP request waiting for it (its Exchange); the server's own
// requests and notifications go to the session's GET stream (numbered, kept
// for replay), or to an open SSE answer stream when no GET stream is open.
//
// Thread-safe: HTTP worker threads call it concurrently; `mu` guards the
// state below it, `cv` announces every change.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "taskledger/mcp_proxy/http_listener.h"

namespace taskledger::mcp::proxy_internal {

// A POSTed request waiting for its answer.
struct Exchange {
  bool streams = false;               // the client takes an SSE stream
  std::deque<std::string> messages;   // the server's messages routed here
  std::optional<std::string> answer;  // the JSON-RPC response
};

class SessionBridge {
 public:
  // Starts the proxy of `parts` on its own thread. Unavailable if no
  // socketpair could be made.
  static Result<std::shared_ptr<SessionBridge>> Start(std::string id, GatedSession parts,
                                                      size_t replay_events);
  ~SessionBridge();  // End()
  SessionBridge(const SessionBridge&) = delete;
  SessionBridge& operator=(const SessionBridge&) = delete;

  const std::string& id() const { return id_; }
  // Writes one message (a JSON text without newlines) to the proxy; false
  // once the session has ended.
  bool Send(const std::string& line);
  // Registers the request whose id.dump() is `key`; nullptr if a request
  // with that id is already waiting. Forget() when done with it.
  std::shared_ptr<Exchange> Expect(const std::string& key, bool streams);
  void Forget(const std::string& key);
  // Ends the session: the proxy's client side closes, the proxy finishes
  // (answering what it owes within its grace) and both threads are joined.
  // Idempotent.
  void End();
  // Wakes every waiter (the listener is stopping).
  void Interrupt();

  std::mutex mu;
  std::condition_variable cv;
  // --- guarded by mu --------------------------------------------------
  bool ended = false;  // the proxy's side closed
  bool interrupted = false;
  std::string end_reason;        // why the proxy's Run ended early, if it failed
  std::string protocol_version;  // negotiated at initialize
  bool get_open = false;
  // The server's messages for the GET stream: (event number, message).
  std::deque<std::pair<uint64_t, std::string>> events;
  uint64_t next_event = 1;
  uint64_t delivered = 0;  // highest event number written to a GET stream
  std::optional<ProxyReport> report;
  // The end of the last request or stream (or the start of one in progress).
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  // No request is waiting for an answer, no GET stream is open and nothing
  // happened for `idle` since last_active. REQUIRES: mu held.
  bool IdleFor(std::chrono::milliseconds idle, std::chrono::steady_clock::time_point now) const {
    return !get_open && exchanges_.empty() && now - last_active >= idle;
  }

 private:
  SessionBridge(std::string id, GatedSession parts, size_t replay_events)
      : id_(std::move(id)), parts_(std::move(parts)), replay_events_(replay_events) {}
  void ReadLoop();
  void Route(std::string line);

  std::string id_;
  GatedSession parts_;
  size_t replay_events_;
  std::unique_ptr<GatingProxy> proxy_;
  int bridge_fd_ = -1, proxy_fd_ = -1;
  std::mutex write_mu_;
  std::thread proxy_thread_, reader_thread_;
  std::mutex end_mu_;  // serialises End()
  bool joined_ = false;
  std::map<std::string, std::shared_ptr<Exchange>> exchanges_;  // guarded by mu
};

}  // namespace taskledger::mcp::proxy_internal
