// ReplayInput (see replay_input.h).
#include "replay_input.h"

#include <utility>

namespace taskledger::cli {

ReplayInput::ReplayInput(std::vector<std::string> paths) : paths_(std::move(paths)) {}

bool ReplayInput::OpenNext() {
  if (!error_.ok()) return false;
  if (reader_ != nullptr) return true;
  if (next_path_ == paths_.size()) return false;
  auto opened = TraceReader::Open(paths_[next_path_++], limits_);
  if (!opened.has_value()) {
    error_ = opened.error();
    return false;
  }
  reader_ = std::move(opened.value());
  return true;
}

std::optional<ReplayItem> ReplayInput::Next() {
  while (OpenNext()) {
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

std::optional<ReplayText> ReplayInput::NextText() {
  while (OpenNext()) {
    std::optional<TraceLineText> line = reader_->NextText();
    if (!line) {
      reader_.reset();
      continue;
    }
    return ReplayText{reader_->path() + ":" + std::to_string(line->line), std::move(line->text)};
  }
  return std::nullopt;
}

}  // namespace taskledger::cli
