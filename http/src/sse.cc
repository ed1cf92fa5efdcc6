// Server-Sent Events framing and parsing (see taskledger/http/sse.h).
#include "taskledger/http/sse.h"

namespace taskledger::http {

std::string FormatSseEvent(std::string_view data, std::string_view id, std::string_view event) {
  std::string out;
  out.reserve(data.size() + id.size() + event.size() + 24);
  if (event != "message") out.append("event: ").append(event).append("\n");
  if (!id.empty()) out.append("id: ").append(id).append("\n");
  size_t start = 0;
  while (true) {
    size_t end = data.find_first_of("\r\n", start);
    out.append("data: ").append(data.substr(start, end - start)).append("\n");
    if (end == std::string_view::npos) break;
    start = end + (data.compare(end, 2, "\r\n") == 0 ? 2 : 1);
  }
  out.append("\n");
  return out;
}

void SseParser::Feed(std::string_view chunk, const std::function<void(const SseEvent&)>& on_event) {
  size_t start = 0;
  if (skip_lf_ && !chunk.empty() && chunk[0] == '\n') start = 1;
  skip_lf_ = false;
  for (size_t i = start; i < chunk.size(); ++i) {
    char c = chunk[i];
    if (c != '\n' && c != '\r') continue;
    if (partial_.empty()) {
      Line(chunk.substr(start, i - start), on_event);
    } else {
      partial_.append(chunk.substr(start, i - start));
      std::string line = std::move(partial_);
      partial_.clear();
      Line(line, on_event);
    }
    if (c == '\r') {
      if (i + 1 < chunk.size()) {
        if (chunk[i + 1] == '\n') ++i;
      } else {
        skip_lf_ = true;
      }
    }
    start = i + 1;
  }
  if (start < chunk.size()) {
    if (partial_.size() + (chunk.size() - start) > max_) {
      oversize_ = true;  // the line is dropped; keep looking for its end
      partial_.clear();
    } else {
      partial_.append(chunk.substr(start));
    }
  }
}

void SseParser::Line(std::string_view line, const std::function<void(const SseEvent&)>& on_event) {
  if (line.empty()) {  // dispatch
    if (oversize_) {
      ++dropped_;
    } else if (has_data_) {
      if (!current_.id.empty()) last_id_ = current_.id;
      on_event(current_);
    }
    current_ = SseEvent{};
    has_data_ = false;
    oversize_ = false;
    return;
  }
  if (oversize_ || line[0] == ':') return;  // a comment (keep-alive)
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (current_.data.size() + value.size() + 1 > max_) {
      oversize_ = true;
      return;
    }
    if (has_data_) current_.data.push_back('\n');
    current_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    current_.event = value.empty() ? "message" : std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) current_.id = std::string(value);
  }
}

}  // namespace taskledger::http
