// Shared helpers of the Python extension (taskledger._core): conversion
// between Python objects and nlohmann::json with explicit limits, strict
// text arguments, and the exception family that mirrors StatusCode.
//
// Every function here must be called with the GIL held. Conversions never
// let a C++ exception escape: a value that is not JSON (a set, bytes, NaN, an
// int beyond 64 bits, a str holding lone surrogates, a cycle or nesting past
// the depth limit) raises taskledger.InvalidArgument naming where it was.
#pragma once

#include <string>
#include <string_view>

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

#include "taskledger/base/status.h"

namespace taskledger::py {

namespace pyb = pybind11;

// How deep Python values handed to taskledger may nest (arguments use the
// adapters' kMaxArgumentDepth; outputs this).
inline constexpr int kMaxValueDepth = 256;

// Creates taskledger.Error and one subclass per StatusCode on `m`.
void RegisterErrors(pyb::module_& m);
// Raises the exception class of `status` with its message. REQUIRES: !status.ok().
[[noreturn]] void Raise(const Status& status);
// The exception class for `code` (a new reference).
pyb::object ErrorClass(StatusCode code);
// Raises InvalidArgument with `message`.
[[noreturn]] void RaiseInvalid(const std::string& message);
// Unwraps a Result or raises its Status.
template <class T>
T Unwrap(Result<T> r) {
  if (!r.has_value()) Raise(r.error());
  return std::move(r).value();
}
inline void Check(const Status& s) {
  if (!s.ok()) Raise(s);
}

// Python value -> JSON. `what` names the value in error messages.
nlohmann::json ToJson(pyb::handle value, std::string_view what, int max_depth = kMaxValueDepth);
// JSON -> Python (dict, list, str, int, float, bool, None).
pyb::object FromJson(const nlohmann::json& value);
// A str argument as UTF-8; InvalidArgument for non-str or invalid text.
std::string Text(pyb::handle value, std::string_view what);

}  // namespace taskledger::py
