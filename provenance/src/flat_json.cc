// Flatten and Unflatten (internal/flat_json.h): the preorder encoding of a
// JSON value the provenance index queues outputs in.
#include "internal/flat_json.h"

#include "internal/leaf_text.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

namespace taskledger::provenance::detail {
namespace {

// Upper bounds of a scalar's JSON text (what the index's walk indexes).
constexpr std::size_t kIntegerBytes = 20;
constexpr std::size_t kFloatBytes = 32;
constexpr std::size_t kBooleanBytes = 5;
// Upper bounds of the sources a scalar adds: the field and its tokens. A
// token starts only at a digit or letter after a non-word byte or at the
// text's start: "true" and "-42" have one such place, a float's text
// ("-1.5e+20") at most three (start, after '.', after the exponent's sign).
constexpr std::size_t kIntegerSources = 2;
constexpr std::size_t kFloatSources = 4;
constexpr std::size_t kBooleanSources = 2;

enum Tag : char {
  kNull = 'n',
  kTrue = 't',
  kFalse = 'f',
  kInt = 'i',
  kUint = 'u',
  kFloat = 'd',
  kString = 's',
  kArray = 'a',
  kObject = 'o'
};

template <typename T>
void Put(std::string& out, T v) {
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out.append(raw, sizeof(T));
}

struct Writer {
  std::size_t max_bytes;
  int max_depth;
  std::string& out;
  FlatMeasure m;

  bool PutString(std::string_view s) {
    if (s.size() > std::numeric_limits<std::uint32_t>::max()) return false;
    Put(out, static_cast<std::uint32_t>(s.size()));
    out.append(s);
    return true;
  }

  void Leaf(std::size_t text_bytes) {
    m.bytes += text_bytes;
    ++m.leaves;
    if (m.bytes > max_bytes) m.fits = false;
  }

  void Node(const nlohmann::json& v, int depth) {
    using Type = nlohmann::json::value_t;
    switch (v.type()) {
      case Type::object:
      case Type::array: {
        if (depth >= max_depth || v.size() > std::numeric_limits<std::uint32_t>::max()) {
          m.fits = false;
          return;
        }
        const bool object = v.is_object();
        out.push_back(object ? kObject : kArray);
        Put(out, static_cast<std::uint32_t>(v.size()));
        for (auto it = v.begin(); it != v.end() && m.fits; ++it) {
          if (object && !PutString(it.key())) m.fits = false;
          if (m.fits) Node(it.value(), depth + 1);
        }
        return;
      }
      case Type::null:
        out.push_back(kNull);
        return;
      case Type::string: {
        const auto& s = v.get_ref<const std::string&>();
        out.push_back(kString);
        if (!PutString(s)) {
          m.fits = false;
          return;
        }
        Leaf(s.size());
        return;
      }
      case Type::boolean:
        out.push_back(v.get<bool>() ? kTrue : kFalse);
        Leaf(kBooleanBytes);
        return;
      case Type::number_integer:
        out.push_back(kInt);
        Put(out, v.get<std::int64_t>());
        Leaf(kIntegerBytes);
        return;
      case Type::number_unsigned:
        out.push_back(kUint);
        Put(out, v.get<std::uint64_t>());
        Leaf(kIntegerBytes);
        return;
      case Type::number_float:
        out.push_back(kFloat);
        Put(out, v.get<double>());
        Leaf(kFloatBytes);
        return;
      case Type::binary:
      case Type::discarded:
        m.fits = false;  // its text is not cheap to size: the caller walks it now
        return;
    }
  }
};

struct Reader {
  std::string_view in;
  std::size_t at = 0;

  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, in.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }

  std::string GetString() {
    const auto n = Get<std::uint32_t>();
    std::string s(in.substr(at, n));
    at += n;
    return s;
  }

  nlohmann::json Node() {
    const char tag = in[at++];
    switch (tag) {
      case kObject: {
        nlohmann::json obj = nlohmann::json::object();
        const auto n = Get<std::uint32_t>();
        for (std::uint32_t i = 0; i < n; ++i) {
          std::string key = GetString();
          obj[std::move(key)] = Node();
        }
        return obj;
      }
      case kArray: {
        nlohmann::json arr = nlohmann::json::array();
        const auto n = Get<std::uint32_t>();
        arr.get_ref<nlohmann::json::array_t&>().reserve(n);
        for (std::uint32_t i = 0; i < n; ++i) arr.push_back(Node());
        return arr;
      }
      case kString:
        return GetString();
      case kTrue:
        return true;
      case kFalse:
        return false;
      case kInt:
        return Get<std::int64_t>();
      case kUint:
        return Get<std::uint64_t>();
      case kFloat:
        return Get<double>();
      default:
        return nullptr;
    }
  }
};

// Walks Flatten's encoding like Reader, summing the sources of its leaves.
struct Bounder {
  std::string_view in;
  std::size_t at = 0;
  std::size_t sources = 0;

  std::uint32_t Count() {
    std::uint32_t n;
    std::memcpy(&n, in.data() + at, sizeof(n));
    at += sizeof(n);
    return n;
  }

  void Node() {
    switch (in[at++]) {
      case kObject:
        for (std::uint32_t i = Count(); i > 0; --i) {
          at += Count();  // the key
          Node();
        }
        return;
      case kArray:
        for (std::uint32_t i = Count(); i > 0; --i) Node();
        return;
      case kString: {
        const std::uint32_t n = Count();
        sources += 1 + TokenStartBound(in.substr(at, n));
        at += n;
        return;
      }
      case kTrue:
      case kFalse:
        sources += kBooleanSources;
        return;
      case kInt:
      case kUint:
        at += sizeof(std::int64_t);
        sources += kIntegerSources;
        return;
      case kFloat:
        at += sizeof(double);
        sources += kFloatSources;
        return;
      default:
        return;
    }
  }
};

}  // namespace

std::size_t SourceBound(std::string_view flat) {
  Bounder b{flat};
  b.Node();
  return b.sources;
}

FlatMeasure Flatten(const nlohmann::json& value, std::size_t max_bytes, int max_depth,
                    std::string& out) {
  Writer w{max_bytes, max_depth, out, {}};
  w.Node(value, 0);
  return w.m;
}

nlohmann::json Unflatten(std::string_view flat) {
  Reader r{flat};
  return r.Node();
}

}  // namespace taskledger::provenance::detail
