// Status and Result<T>: how every taskledger API reports failure.
//
// taskledger returns errors as values and never lets an exception cross its
// public API (see docs/design.md, "Errors"). A Status is a code plus a message a
// human can act on; Result<T> holds either a T or a non-ok Status, with the
// names of std::expected (has_value/value/error) so moving to it is mechanical.
// Both are plain values: copyable, thread-compatible, no shared state.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace taskledger {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller's input is malformed or out of range
  kNotFound,            // the conversation, version, command or key does not exist
  kConflict,            // optimistic concurrency lost: someone else wrote first
  kUnavailable,         // the store cannot be reached (connect refused, reset)
  kTimeout,             // the store did not answer within the configured timeout
  kCorruption,          // stored data failed to decode
  kLimitExceeded,       // a size, depth, instruction or memory limit was hit
  kPolicyError,         // a policy rule failed (the call is denied: fail closed)
  kDivergence,          // a journal replay saw a different request than recorded
  kFailedPrecondition,  // a state transition not allowed from the current state
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status LimitExceeded(std::string m) { return {StatusCode::kLimitExceeded, std::move(m)}; }
  static Status PolicyError(std::string m) { return {StatusCode::kPolicyError, std::move(m)}; }
  static Status Divergence(std::string m) { return {StatusCode::kDivergence, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "conflict: head is 7, expected 6"
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-ok Status. REQUIRES: a Result is never built from an ok Status.
template <class T>
class [[nodiscard]] Result {
 public:
  // Implicit like std::expected: `return value;` and `return error;` both work.
  Result(T value) : v_(std::move(value)) {}       // NOLINT(google-explicit-constructor)
  Result(Status error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // REQUIRES: !has_value()
  const Status& error() const { return std::get<1>(v_); }
  // The error, or Ok when a value is held: convenient for propagation.
  Status status() const { return has_value() ? Status::Ok() : error(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace taskledger
