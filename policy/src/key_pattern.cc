// Parsing and matching record API key patterns (see internal/key_pattern.h).
#include "internal/key_pattern.h"

namespace taskledger::policy_internal {

Result<KeyPattern> KeyPattern::Parse(std::string_view pattern) {
  KeyPattern p;
  if (pattern.empty()) return Status::InvalidArgument("the key pattern is empty");
  size_t pos = 0;
  while (true) {
    size_t dot = pattern.find('.', pos);
    std::string_view seg = pattern.substr(pos, dot == std::string_view::npos ? dot : dot - pos);
    if (seg.empty()) {
      return Status::InvalidArgument("key pattern '" + std::string(pattern) +
                                     "' has an empty segment");
    }
    Segment s;
    if (seg.size() >= 2 && seg.front() == '{' && seg.back() == '}' &&
        seg.find_first_of("{}", 1) == seg.size() - 1) {
      s.capture = true;
      s.text = std::string(seg.substr(1, seg.size() - 2));
      ++p.captures_;
    } else if (seg.find_first_of("{}") != std::string_view::npos) {
      return Status::InvalidArgument("key pattern '" + std::string(pattern) + "': segment '" +
                                     std::string(seg) + "' must be a whole {name} or literal");
    } else {
      s.text = std::string(seg);
    }
    p.segments_.push_back(std::move(s));
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (p.captures_ == 0) {
    return Status::InvalidArgument(
        "key pattern '" + std::string(pattern) +
        "' captures nothing: name the id segment, e.g. order.{id}.status");
  }
  return p;
}

void KeyPattern::ForEachMatch(const EntryMap& m, const Visit& f) const {
  std::string prefix;
  std::vector<std::string_view> raw;
  std::vector<std::string> held;
  held.reserve(captures_);
  Walk(m, 0, prefix, raw, held, f);
}

void KeyPattern::Walk(const EntryMap& m, size_t i, std::string& prefix,
                      std::vector<std::string_view>& raw, std::vector<std::string>& held,
                      const Visit& f) const {
  const Segment& s = segments_[i];
  const bool last = i + 1 == segments_.size();
  const size_t base = prefix.size();
  if (!s.capture) {
    prefix += s.text;
    if (last) {
      auto it = m.find(prefix);
      if (it != m.end()) f(it->first, it->second, raw);
    } else {
      prefix += '.';
      Walk(m, i + 1, prefix, raw, held, f);
    }
    prefix.resize(base);
    return;
  }
  auto it = m.lower_bound(prefix);
  while (it != m.end() && it->first.compare(0, base, prefix) == 0) {
    const std::string& key = it->first;
    size_t dot = key.find('.', base);
    if (dot == base || key.size() == base) {  // an empty segment: not an id
      ++it;
      continue;
    }
    if (last) {
      if (dot == std::string::npos) {
        raw.emplace_back(key.data() + base, key.size() - base);
        f(key, it->second, raw);
        raw.pop_back();
        ++it;
        continue;
      }
    } else if (dot != std::string::npos) {
      // The captured id stays alive in `held` while deeper segments match
      // (the iterator's key is only borrowed until the next seek).
      held.emplace_back(key, base, dot - base);
      raw.emplace_back(held.back());
      prefix.append(held.back()).append(1, '.');
      Walk(m, i + 1, prefix, raw, held, f);
      prefix.resize(base);
      raw.pop_back();
      held.pop_back();
    } else {
      ++it;
      continue;
    }
    // Past every key below this id: "<prefix><id>/" follows "<prefix><id>.*".
    std::string next = key.substr(0, dot);
    next += '/';
    it = m.lower_bound(next);
  }
}

bool KeyPattern::Match(std::string_view key, std::vector<std::string_view>& raw) const {
  raw.clear();
  size_t pos = 0;
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (pos > key.size()) return false;
    size_t dot = key.find('.', pos);
    const bool last = i + 1 == segments_.size();
    if (last != (dot == std::string_view::npos)) return false;
    std::string_view seg = key.substr(pos, last ? std::string_view::npos : dot - pos);
    if (segments_[i].capture) {
      if (seg.empty()) return false;
      raw.push_back(seg);
    } else if (seg != segments_[i].text) {
      return false;
    }
    pos = last ? key.size() : dot + 1;
  }
  return true;
}

}  // namespace taskledger::policy_internal
