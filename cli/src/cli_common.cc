// Shared pieces of the CLI verbs (see cli_common.h).
#include "cli_common.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "taskledger/base/json_depth.h"
#include "taskledger/ledger/redis_store.h"

namespace taskledger::cli {

void AddCommonOptions(CLI::App& verb, CommonOptions& options) {
  verb.add_flag("--json", options.json, "Print machine-readable JSON");
  verb.add_option("--store", options.store,
                  "Ledger store: memory (default), a redis:// / rediss:// / unix:// URL, or "
                  "redis+cluster://HOST:PORT[,HOST:PORT...] (rediss+cluster:// for TLS)")
      ->capture_default_str();
  verb.add_option("--tenant", options.tenant, "Tenant namespace in the store")
      ->capture_default_str();
}

std::unique_ptr<Store> OpenStoreOrReport(const CommonOptions& options) {
  auto store = OpenStore(options.store);
  if (!store.has_value()) {
    ReportError("cannot open store " + options.store, store.error());
    return nullptr;
  }
  return std::move(store).value();
}

void NoteIfEphemeralStore(const CommonOptions& options) {
  if (!options.store.empty() && options.store != "memory") return;
  std::cerr << "taskledger: note: --store is the in-memory default, which starts empty in "
               "every process; pass --store redis://HOST:PORT to read what another process "
               "wrote\n";
}

int ReportError(std::string_view context, const Status& status) {
  std::cerr << "taskledger: " << context << ": " << status.ToString() << "\n";
  return kExitUsage;
}

void PrintJson(const nlohmann::json& value) {
  std::cout << value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  constexpr std::streamoff kMaxBytes = 64 << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size > kMaxBytes) return Status::LimitExceeded(path + " is larger than 64 MiB");
  in.seekg(0);
  std::string text(static_cast<size_t>(size < 0 ? 0 : size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  // The same depth bound as the trace reader: deeper is not a sensible input.
  if (JsonNestsDeeperThan(text, 128))
    return Status::LimitExceeded(path + ": JSON nested deeper than 128");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
}

int64_t MonotonicMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(uint64_t done, uint64_t total, std::string_view detail) {
  if (!enabled_) return;
  int64_t now = MonotonicMs();
  if (drawn_ && now - last_draw_ms_ < 100 && done < total) return;
  last_draw_ms_ = now;
  constexpr int kWidth = 30;
  int filled = total == 0 ? 0 : static_cast<int>(kWidth * std::min<uint64_t>(done, total) / total);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, ' ');
  int percent = total == 0 ? 0 : static_cast<int>(100 * std::min<uint64_t>(done, total) / total);
  std::fprintf(stderr, "\r%s [%s] %3d%% %.*s\033[K", label_.c_str(), bar.c_str(), percent,
               static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

bool ParseHostPort(const std::string& text, std::string& host, int& port) {
  size_t colon = text.rfind(':');
  std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  host = colon == std::string::npos ? "127.0.0.1" : text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  port = std::stoi(port_text);
  return port <= 65535;
}

}  // namespace taskledger::cli
