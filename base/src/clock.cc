// The real wall clock behind the Clock seam.
#include "taskledger/base/clock.h"

#include <chrono>

namespace taskledger {
namespace {

class RealClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

const Clock& SystemClock() {
  static const RealClock clock;
  return clock;
}

}  // namespace taskledger
