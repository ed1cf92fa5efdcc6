// Server-Sent Events (the WHATWG HTML "text/event-stream" format): the
// framing of one event, and an incremental parser for a stream of them.
// Internal to this tree: not installed. Not thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace taskledger::http {

struct SseEvent {
  std::string event = "message";  // the "event:" field, "message" when absent
  std::string data;               // "data:" lines joined with '\n'
  std::string id;                 // the "id:" field of this event, or ""
};

// One event as it goes on the wire, ending with the blank line. `data` may
// hold newlines (each line becomes a data: field). Empty `id`: no id field.
std::string FormatSseEvent(std::string_view data, std::string_view id = {},
                           std::string_view event = "message");

class SseParser {
 public:
  // Longest event accepted; a longer one is dropped (and counted).
  explicit SseParser(size_t max_event_bytes = 16u << 20) : max_(max_event_bytes) {}
  // Feeds the next piece of the stream; calls `on_event` for each event it
  // completes (events with no data field are not dispatched, as in the spec).
  void Feed(std::string_view chunk, const std::function<void(const SseEvent&)>& on_event);
  size_t dropped() const { return dropped_; }
  // The last event id seen (for Last-Event-ID on reconnection).
  const std::string& last_event_id() const { return last_id_; }

 private:
  void Line(std::string_view line, const std::function<void(const SseEvent&)>& on_event);

  size_t max_;
  std::string partial_;
  SseEvent current_;
  bool has_data_ = false;
  bool oversize_ = false;
  bool skip_lf_ = false;  // the last chunk ended in '\r'
  size_t dropped_ = 0;
  std::string last_id_;
};

}  // namespace taskledger::http
