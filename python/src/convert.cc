// Python <-> JSON conversion and the exception family of the extension; see
// convert.h. GIL held throughout.
#include "convert.h"

#include <cmath>
#include <utility>

namespace taskledger::py {
namespace {

struct ErrorDef {
  StatusCode code;
  const char* name;
  const char* doc;
};

constexpr ErrorDef kErrors[] = {
    {StatusCode::kInvalidArgument, "InvalidArgument",
     "The caller's input is malformed or out of range (also: a value that is not JSON)."},
    {StatusCode::kNotFound, "NotFound",
     "The conversation, version, command or key does not exist."},
    {StatusCode::kConflict, "Conflict",
     "Another writer committed first; Session.rebase() then end_turn() again."},
    {StatusCode::kUnavailable, "Unavailable", "The store cannot be reached."},
    {StatusCode::kTimeout, "Timeout",
     "The store, or a tool run with a timeout, did not answer in time."},
    {StatusCode::kCorruption, "Corruption", "Stored data failed to decode."},
    {StatusCode::kLimitExceeded, "LimitExceeded", "A size, depth, time or memory limit was hit."},
    {StatusCode::kPolicyError, "PolicyError", "A policy rule failed (the call is denied)."},
    {StatusCode::kDivergence, "Divergence", "A journal replay saw a different request."},
    {StatusCode::kFailedPrecondition, "FailedPrecondition",
     "Not allowed in the current state (e.g. a Session used from two threads at once)."},
    {StatusCode::kInternal, "Internal", "A bug in taskledger."},
};

pyb::object& BaseError() {
  static pyb::object* base = nullptr;
  if (!base) base = new pyb::object();  // lives as long as the interpreter
  return *base;
}

pyb::object* ErrorClasses() {
  static pyb::object* classes = new pyb::object[std::size(kErrors) + 1];
  return classes;
}

std::string Where(std::string_view what) { return std::string(what); }

nlohmann::json Convert(pyb::handle v, const std::string& path, int depth, int max_depth) {
  if (depth > max_depth) {
    RaiseInvalid(path + " nests deeper than " + std::to_string(max_depth) +
                 " levels (or contains itself)");
  }
  PyObject* o = v.ptr();
  if (o == Py_None) return nullptr;
  if (PyBool_Check(o)) return o == Py_True;
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0 && !(n == -1 && PyErr_Occurred())) return static_cast<int64_t>(n);
    PyErr_Clear();
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (!PyErr_Occurred()) return static_cast<uint64_t>(u);
      PyErr_Clear();
    }
    RaiseInvalid(path + " is an integer outside the 64-bit range JSON numbers keep exactly");
  }
  if (PyFloat_Check(o)) {
    double d = PyFloat_AS_DOUBLE(o);
    if (!std::isfinite(d)) RaiseInvalid(path + " is " + std::to_string(d) + ", which is not JSON");
    return d;
  }
  if (PyUnicode_Check(o)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(o, &size);
    if (!data) {
      PyErr_Clear();
      RaiseInvalid(path + " is a str that is not valid Unicode text (lone surrogates)");
    }
    return std::string(data, static_cast<size_t>(size));
  }
  if (PyDict_Check(o)) {
    nlohmann::json out = nlohmann::json::object();
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &value)) {
      if (!PyUnicode_Check(key)) {
        RaiseInvalid(path + " has a key of type " + std::string(Py_TYPE(key)->tp_name) +
                     "; JSON object keys are str");
      }
      std::string k = Text(key, path + " key");
      // Hold references: a __del__ elsewhere must not free them mid-walk.
      pyb::object hold_value = pyb::reinterpret_borrow<pyb::object>(value);
      out[k] = Convert(hold_value, path + "[" + pyb::repr(key).cast<std::string>() + "]", depth + 1,
                       max_depth);
    }
    return out;
  }
  if (PyList_Check(o) || PyTuple_Check(o)) {
    pyb::sequence seq = pyb::reinterpret_borrow<pyb::sequence>(v);
    nlohmann::json out = nlohmann::json::array();
    size_t i = 0;
    for (pyb::handle item : seq) {
      out.push_back(Convert(item, path + "[" + std::to_string(i) + "]", depth + 1, max_depth));
      ++i;
    }
    return out;
  }
  RaiseInvalid(path + " is a " + std::string(Py_TYPE(o)->tp_name) +
               ", which is not JSON (use dict, list, str, int, float, bool or None)");
}

}  // namespace

void RegisterErrors(pyb::module_& m) {
  PyObject* base =
      PyErr_NewExceptionWithDoc("taskledger.Error",
                                "Base of every taskledger error; `code` names the StatusCode "
                                "(\"conflict\", \"unavailable\", ...).",
                                PyExc_Exception, nullptr);
  if (!base) throw pyb::error_already_set();
  BaseError() = pyb::reinterpret_steal<pyb::object>(base);
  m.attr("Error") = BaseError();
  for (size_t i = 0; i < std::size(kErrors); ++i) {
    const ErrorDef& def = kErrors[i];
    std::string qualified = std::string("taskledger.") + def.name;
    pyb::object bases = BaseError();
    // Timeout is also the builtin TimeoutError, so `except TimeoutError` catches it.
    if (def.code == StatusCode::kTimeout)
      bases = pyb::make_tuple(BaseError(), pyb::handle(PyExc_TimeoutError));
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), def.doc, bases.ptr(), nullptr);
    if (!cls) throw pyb::error_already_set();
    pyb::object obj = pyb::reinterpret_steal<pyb::object>(cls);
    obj.attr("code") = std::string(StatusCodeName(def.code));
    m.attr(def.name) = obj;
    ErrorClasses()[static_cast<int>(def.code)] = obj;
  }
}

pyb::object ErrorClass(StatusCode code) {
  int i = static_cast<int>(code);
  if (i <= 0 || i > static_cast<int>(std::size(kErrors))) return BaseError();
  return ErrorClasses()[i];
}

void Raise(const Status& status) {
  pyb::object cls = ErrorClass(status.code());
  PyErr_SetString(cls.ptr(), status.message().c_str());
  throw pyb::error_already_set();
}

void RaiseInvalid(const std::string& message) { Raise(Status::InvalidArgument(message)); }

nlohmann::json ToJson(pyb::handle value, std::string_view what, int max_depth) {
  return Convert(value, Where(what), 0, max_depth);
}

pyb::object FromJson(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return pyb::none();
    case nlohmann::json::value_t::boolean:
      return pyb::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return pyb::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return pyb::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return pyb::float_(j.get<double>());
    case nlohmann::json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      // Text from the store or a tool may hold bytes that are not UTF-8:
      // replace them rather than fail the whole read.
      PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
      if (!o) throw pyb::error_already_set();
      return pyb::reinterpret_steal<pyb::object>(o);
    }
    case nlohmann::json::value_t::array: {
      pyb::list out;
      for (const auto& item : j) out.append(FromJson(item));
      return out;
    }
    case nlohmann::json::value_t::object: {
      pyb::dict out;
      for (const auto& [k, item] : j.items()) {
        PyObject* key =
            PyUnicode_DecodeUTF8(k.data(), static_cast<Py_ssize_t>(k.size()), "replace");
        if (!key) throw pyb::error_already_set();
        out[pyb::reinterpret_steal<pyb::object>(key)] = FromJson(item);
      }
      return out;
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return pyb::none();
}

std::string Text(pyb::handle value, std::string_view what) {
  if (!PyUnicode_Check(value.ptr())) {
    RaiseInvalid(std::string(what) + " must be a str, not " +
                 std::string(Py_TYPE(value.ptr())->tp_name) +
                 (PyBytes_Check(value.ptr()) ? " (decode bytes first)" : ""));
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (!data) {
    PyErr_Clear();
    RaiseInvalid(std::string(what) + " is not valid Unicode text (lone surrogates)");
  }
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace taskledger::py
