// TraceReader: buffered line reading with a hard cap per line (see trace_reader.h).
#include "taskledger/session/trace_reader.h"

#include <sys/stat.h>
#include <cerrno>
#include <cstring>

namespace taskledger {

Result<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path,
                                                       TraceLimits limits) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::NotFound("cannot open trace " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  uint64_t size = 0;
  if (::fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) size = static_cast<uint64_t>(st.st_size);
  return std::unique_ptr<TraceReader>(new TraceReader(f, path, limits, size));
}

TraceReader::TraceReader(std::FILE* f, std::string path, TraceLimits limits, uint64_t size)
    : file_(f), path_(std::move(path)), limits_(limits), file_size_(size) {}

TraceReader::~TraceReader() { std::fclose(file_); }

bool TraceReader::ReadLine() {
  line_.clear();
  too_long_ = false;
  bool any = false;
  for (;;) {
    int c = getc_unlocked(file_);  // one reader per thread: no stdio locking needed
    if (c == EOF) {
      if (std::ferror(file_)) failed_ = true;
      return any;
    }
    any = true;
    ++bytes_read_;
    if (c == '\n') return true;
    if (line_.size() < limits_.max_line_bytes) {
      line_.push_back(static_cast<char>(c));
    } else {
      too_long_ = true;  // keep consuming up to the newline without buffering
    }
  }
}

std::optional<TraceLine> TraceReader::Next() {
  while (!failed_) {
    if (!ReadLine()) {
      if (failed_) {
        return TraceLine{line_no_ + 1, Status::Unavailable("read error in " + path_)};
      }
      return std::nullopt;
    }
    ++line_no_;
    if (too_long_) {
      return TraceLine{line_no_,
                       Status::LimitExceeded("line longer than " +
                                             std::to_string(limits_.max_line_bytes) + " bytes")};
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.find_first_not_of(" \t") == std::string::npos) continue;
    return TraceLine{line_no_, ParseTraceLine(line_, limits_)};
  }
  return std::nullopt;
}

}  // namespace taskledger
