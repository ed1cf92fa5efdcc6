// What every verb of the taskledger CLI shares: the exit-code contract, the
// common options (--json, --store), opening the store, printing JSON and
// errors, and the progress bar. Single-threaded, like the CLI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"
#include "taskledger/ledger/store.h"

namespace taskledger::cli {

// The exit codes every verb uses.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // a check failed: a mismatch, a failing test, a denial
inline constexpr int kExitUsage = 2;        // bad usage or input, or an unreachable store

struct CommonOptions {
  bool json = false;
  std::string store = "memory";
  std::string tenant = "default";
};

// Adds --json, --store and --tenant to `verb`.
void AddCommonOptions(CLI::App& verb, CommonOptions& options);

// Opens the store named by --store; prints the error and returns nullptr on failure.
std::unique_ptr<Store> OpenStoreOrReport(const CommonOptions& options);
// For verbs that read what another process wrote (audit, metrics, render,
// commands): on the in-memory default, a note on stderr that it starts empty
// in every process and how to name a durable store. Nothing otherwise.
void NoteIfEphemeralStore(const CommonOptions& options);

// "taskledger: <context>: <status>" on stderr; returns kExitUsage.
int ReportError(std::string_view context, const Status& status);

// Prints one JSON value on one line to stdout.
void PrintJson(const nlohmann::json& value);

// Reads a whole JSON file (size- and depth-limited).
Result<nlohmann::json> ReadJsonFile(const std::string& path);

// A one-line progress bar on stderr, drawn only when stderr is a terminal and
// at most ~10 times a second.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void Update(uint64_t done, uint64_t total, std::string_view detail);
  void Finish();
  // False when stderr is not a terminal: Update draws nothing, so a caller
  // need not build its detail text.
  bool enabled() const { return enabled_; }

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  int64_t last_draw_ms_ = 0;
};

// The process's monotonic clock in milliseconds.
int64_t MonotonicMs();

// Parses a listen address: "HOST:PORT", "[::1]:PORT" (brackets dropped) or just
// "PORT" (loopback, 127.0.0.1; an empty host is loopback too). Returns false
// unless the port is 1 to 5 digits and at most 65535.
bool ParseHostPort(const std::string& text, std::string& host, int& port);

}  // namespace taskledger::cli
