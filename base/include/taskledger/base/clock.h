// Clock: the seam in front of wall-clock time, so expiry, leases and retention
// can be tested deterministically. SystemClock is thread-safe; ManualClock is
// thread-safe (atomic) and only moves when a test moves it.
#pragma once

#include <atomic>
#include <cstdint>

namespace taskledger {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowMs() const = 0;  // Unix time in milliseconds
};

// The process-wide real clock.
const Clock& SystemClock();

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t NowMs() const override { return now_.load(); }
  void Advance(int64_t ms) { now_ += ms; }
  void Set(int64_t ms) { now_ = ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace taskledger
