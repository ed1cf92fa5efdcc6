// ReplayInput: the trace files a verb replays (`replay`, `policy coverage`),
// read one conversation at a time, in the order given, each file opened when
// reading reaches it. A line that cannot be read comes back as an error with
// its "FILE:LINE", so each verb decides whether to skip it or stop; a file
// that cannot be opened ends the input (error() says why). NextText gives the
// lines unparsed, for a verb that parses them on its worker threads
// (ParseTraceLine with limits()). One reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taskledger/session/trace_reader.h"

namespace taskledger::cli {

struct ReplayItem {
  std::string where;                       // "FILE:LINE", for messages about this line
  Result<TraceConversation> conversation;  // or why the line could not be read
};

// A line before parsing.
struct ReplayText {
  std::string where;         // "FILE:LINE"
  Result<std::string> text;  // the line, or why it could not be read
};

class ReplayInput {
 public:
  explicit ReplayInput(std::vector<std::string> paths);

  // The next non-blank line of the traces; nullopt at the end of the last
  // file, or when a file cannot be opened (then error() is not OK).
  std::optional<ReplayItem> Next();
  // The same lines as Next, not parsed.
  std::optional<ReplayText> NextText();
  // The limits every line is read (and is to be parsed) with.
  const TraceLimits& limits() const { return limits_; }
  // Leaves the rest of the current file unread: the next Next() opens the
  // next file.
  void SkipRestOfFile() { reader_.reset(); }
  // OK, or why a trace file could not be opened.
  const Status& error() const { return error_; }
  // Progress within the file being read: bytes consumed and its size (0 if unknown).
  uint64_t bytes_read() const { return reader_ ? reader_->bytes_read() : 0; }
  uint64_t file_size() const { return reader_ ? reader_->file_size() : 0; }

 private:
  // Opens the next file when none is open; false at the end or on error.
  bool OpenNext();

  std::vector<std::string> paths_;
  TraceLimits limits_;
  size_t next_path_ = 0;
  std::unique_ptr<TraceReader> reader_;
  Status error_;
};

}  // namespace taskledger::cli
