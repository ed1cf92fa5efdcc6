// Newline-delimited JSON-RPC framing over non-blocking descriptors: a reader
// that splits what arrives into lines no longer than a bound (the rest of a
// longer line is discarded without being buffered), and a write queue that
// sends whole lines as the peer accepts them. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace taskledger::mcp::proxy_internal {

struct Line {
  std::string text;       // without the newline (and a trailing '\r')
  bool oversize = false;  // the line was longer than the bound; text is empty
};

class LineReader {
 public:
  explicit LineReader(size_t max_line_bytes) : max_(max_line_bytes) {}
  enum class State { kOpen, kEof, kError };
  // Reads what `fd` has now and appends every completed line to `out` (blank
  // lines are skipped; an oversize line is reported once, when it exceeds
  // the bound). kEof / kError: the descriptor is finished; a partial last
  // line without its newline is delivered as a line.
  State ReadFrom(int fd, std::vector<Line>& out);

 private:
  void Split(const char* data, size_t n, std::vector<Line>& out);
  void Emit(std::vector<Line>& out);

  size_t max_;
  std::string partial_;
  bool discarding_ = false;  // inside an oversize line, until its newline
};

class WriteQueue {
 public:
  // Queues `line` plus a newline.
  void Push(std::string_view line);
  size_t pending_bytes() const { return buffer_.size() - offset_; }
  // Writes as much as `fd` accepts now. False when the peer is gone (EPIPE
  // or another write error); the queue is then dropped.
  bool FlushTo(int fd);

 private:
  std::string buffer_;
  size_t offset_ = 0;
};

}  // namespace taskledger::mcp::proxy_internal
