// ReplayInput (see replay_input.h).
#include "replay_input.h"

#include <utility>

namespace taskledger::cli {

ReplayInput::ReplayInput(std::vector<std::string> paths) : paths_(std::move(paths)) {}

std::optional<ReplayItem> ReplayInput::Next() {
  while (error_.ok()) {
    if (reader_ == nullptr) {
      if (next_path_ == paths_.size()) return std::nullopt;
      auto opened = TraceReader::Open(paths_[next_path_++]);
      if (!opened.has_value()) {
        error_ = opened.error();
        return std::nullopt;
      }
      reader_ = std::move(opened.value());
    }
    std::optional<TraceLine> line = reader_->Next();
    if (!line) {
      reader_.reset();
      continue;
    }
    return ReplayItem{reader_->path() + ":" + std::to_string(line->line),
                      std::move(line->conversation)};
  }
  return std::nullopt;
}

}  // namespace taskledger::cli
