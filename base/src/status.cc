// Names of status codes and the one-line rendering of a Status.
#include "taskledger/base/status.h"

namespace taskledger {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kConflict:
      return "conflict";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kCorruption:
      return "corruption";
    case StatusCode::kLimitExceeded:
      return "limit exceeded";
    case StatusCode::kPolicyError:
      return "policy error";
    case StatusCode::kDivergence:
      return "divergence";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  if (!message_.empty()) out += ": " + message_;
  return out;
}

}  // namespace taskledger
