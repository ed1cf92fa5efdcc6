// TraceReader: buffered line reading with a hard cap per line (see trace_reader.h).
#include "taskledger/session/trace_reader.h"

#include <sys/stat.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

namespace taskledger {
namespace {

constexpr size_t kBlockBytes = 64 * 1024;

}  // namespace

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
    if (buffer_pos_ == buffer_end_) {
      if (buffer_.empty()) buffer_.resize(kBlockBytes);
      // One reader per thread: no stdio locking needed.
      const size_t n = fread_unlocked(buffer_.data(), 1, buffer_.size(), file_);
      if (n == 0) {
        if (std::ferror(file_)) failed_ = true;
        return any;
      }
      buffer_pos_ = 0;
      buffer_end_ = n;
    }
    any = true;
    const char* start = buffer_.data() + buffer_pos_;
    const size_t available = buffer_end_ - buffer_pos_;
    const void* newline = std::memchr(start, '\n', available);
    const size_t take = newline == nullptr
                            ? available
                            : static_cast<size_t>(static_cast<const char*>(newline) - start);
    const size_t consumed = take + (newline == nullptr ? 0 : 1);
    bytes_read_ += consumed;
    buffer_pos_ += consumed;
    // Past the limit the rest of the line is consumed without being buffered.
    const size_t room = limits_.max_line_bytes - std::min(line_.size(), limits_.max_line_bytes);
    line_.append(start, std::min(take, room));
    if (take > room) too_long_ = true;
    if (newline != nullptr) return true;
  }
}

std::optional<Status> TraceReader::Advance() {
  while (!failed_) {
    if (!ReadLine()) {
      if (!failed_) return std::nullopt;
      ++line_no_;
      return Status::Unavailable("read error in " + path_);
    }
    ++line_no_;
    if (too_long_) {
      return Status::LimitExceeded("line longer than " + std::to_string(limits_.max_line_bytes) +
                                   " bytes");
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.find_first_not_of(" \t") == std::string::npos) continue;
    return Status::Ok();
  }
  return std::nullopt;
}

std::optional<TraceLine> TraceReader::Next() {
  std::optional<Status> read = Advance();
  if (!read) return std::nullopt;
  if (!read->ok()) return TraceLine{line_no_, std::move(*read)};
  return TraceLine{line_no_, ParseTraceLine(line_, limits_)};
}

std::optional<TraceLineText> TraceReader::NextText() {
  std::optional<Status> read = Advance();
  if (!read) return std::nullopt;
  if (!read->ok()) return TraceLineText{line_no_, std::move(*read)};
  return TraceLineText{line_no_, line_};
}

}  // namespace taskledger
