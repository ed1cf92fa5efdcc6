// TraceReader: reads a trace file (JSON Lines) one conversation at a time, so a
// replay holds one conversation in memory, not the file.
//
// A line longer than TraceLimits::max_line_bytes is skipped without being
// buffered and reported as LimitExceeded; every other bad line is reported with
// its line number and the reader moves on, so the caller chooses between
// skipping (the default CLI behaviour) and stopping (--strict). Blank lines are
// ignored. NextText hands out the line's text unparsed instead, so a caller
// can parse lines on other threads (ParseTraceLine with limits()). Not
// thread-safe: one reader per thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taskledger/session/trace.h"

namespace taskledger {

struct TraceLine {
  uint64_t line = 0;  // 1-based line number in the file
  Result<TraceConversation> conversation;
};

// A line as read, before parsing.
struct TraceLineText {
  uint64_t line = 0;         // 1-based line number in the file
  Result<std::string> text;  // the line (no newline, no trailing '\r'), or why it is unusable
};

class TraceReader {
 public:
  // NotFound if the file cannot be opened.
  static Result<std::unique_ptr<TraceReader>> Open(const std::string& path,
                                                   TraceLimits limits = {});
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // The next non-blank line, parsed; nullopt at end of file. A read error of
  // the file itself is returned once as an Unavailable line, then end of file.
  std::optional<TraceLine> Next();
  // Like Next, without parsing: the same lines, numbers and read errors, and
  // a line over max_line_bytes as the same LimitExceeded. Costs one copy of
  // the line.
  std::optional<TraceLineText> NextText();

  const TraceLimits& limits() const { return limits_; }

  const std::string& path() const { return path_; }
  // Bytes consumed so far and the file size (0 if unknown), for progress.
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t file_size() const { return file_size_; }

 private:
  TraceReader(std::FILE* f, std::string path, TraceLimits limits, uint64_t size);
  // Reads one physical line into line_; false at end of file. Sets
  // too_long_ when the line was truncated at the limit (the rest is skipped).
  bool ReadLine();
  // Moves to the next non-blank line (line_, numbered line_no_); nullopt at
  // end of file, else OK or why the line cannot be used (set at most once
  // for a read error, which ends the file).
  std::optional<Status> Advance();

  std::FILE* file_;
  std::string path_;
  TraceLimits limits_;
  uint64_t file_size_;
  uint64_t bytes_read_ = 0;
  uint64_t line_no_ = 0;
  std::string line_;
  // Read-ahead: the file is read in blocks and split at newlines with memchr.
  std::vector<char> buffer_;
  size_t buffer_pos_ = 0;
  size_t buffer_end_ = 0;
  bool too_long_ = false;
  bool failed_ = false;
};

}  // namespace taskledger
