// Line framing for the MCP proxy (see internal/framing.h).
#include "internal/framing.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace taskledger::mcp::proxy_internal {
namespace {

bool IsBlank(const std::string& s) { return s.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

void LineReader::Emit(std::vector<Line>& out) {
  if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
  if (!IsBlank(partial_)) out.push_back(Line{std::move(partial_), false});
  partial_.clear();
}

void LineReader::Split(const char* data, size_t n, std::vector<Line>& out) {
  size_t pos = 0;
  while (pos < n) {
    const char* nl = static_cast<const char*>(std::memchr(data + pos, '\n', n - pos));
    size_t end = nl ? static_cast<size_t>(nl - data) : n;
    if (discarding_) {
      if (nl) discarding_ = false;
    } else if (partial_.size() + (end - pos) > max_) {
      // Reported as soon as it is known, so the peer is answered promptly;
      // the rest of the line is skipped without being held in memory.
      partial_.clear();
      out.push_back(Line{{}, true});
      discarding_ = nl == nullptr;
    } else {
      partial_.append(data + pos, end - pos);
      if (nl) Emit(out);
    }
    pos = nl ? end + 1 : n;
  }
}

LineReader::State LineReader::ReadFrom(int fd, std::vector<Line>& out) {
  char buf[65536];
  for (int reads = 0; reads < 64; ++reads) {  // bounded, so one side cannot starve the other
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      Split(buf, static_cast<size_t>(n), out);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return State::kOpen;
    if (!discarding_) Emit(out);
    return n == 0 ? State::kEof : State::kError;
  }
  return State::kOpen;
}

void WriteQueue::Push(std::string_view line) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  buffer_.append(line);
  buffer_.push_back('\n');
}

bool WriteQueue::FlushTo(int fd) {
  while (offset_ < buffer_.size()) {
    ssize_t n = ::write(fd, buffer_.data() + offset_, buffer_.size() - offset_);
    if (n > 0) {
      offset_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    buffer_.clear();
    offset_ = 0;
    return false;
  }
  buffer_.clear();
  offset_ = 0;
  return true;
}

}  // namespace taskledger::mcp::proxy_internal
