// Decoding of RedisCommandStore's replies (see internal/command_redis_decode.h):
// field lists, command hashes, run meta hashes and journal entries, each a
// Corruption naming what is wrong rather than a partly filled record; and
// the one-entry cache of the last command spec decoded. Thread-safe.
#include "internal/command_redis_decode.h"

#include <charconv>
#include <cmath>

namespace taskledger::internal {
namespace {

template <class T>
bool ParseNumber(const std::string& s, T& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

Result<Command> DecodeSpec(const std::string& text) {
  auto spec = nlohmann::json::parse(text, nullptr, false);
  if (spec.is_discarded()) return Status::Corruption("command spec is not JSON");
  return DecodeCommand(spec);
}

}  // namespace

void SpecCache::Remember(std::string spec, Command decoded) {
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(spec);
  decoded_ = std::move(decoded);
}

bool DumpLossless(const nlohmann::json& j, std::string& out) {
  // Every number must survive the text: a NaN or infinity is written "null".
  auto finite = [](const nlohmann::json& v, auto& self) -> bool {
    if (v.is_binary()) return false;
    if (v.is_number_float()) return std::isfinite(v.get<double>());
    if (v.is_structured()) {
      for (const auto& item : v) {
        if (!self(item, self)) return false;
      }
    }
    return true;
  };
  if (!finite(j, finite)) return false;
  try {
    out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::type_error&) {
    return false;  // invalid UTF-8 in a string: the store writes it replaced
  }
  return true;
}

Result<Command> SpecCache::Decode(const std::string& spec) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!text_.empty() && text_ == spec) return decoded_;
  }
  auto c = DecodeSpec(spec);
  if (!c) return c;
  std::lock_guard<std::mutex> lock(mu_);
  text_ = spec;
  decoded_ = *c;
  return c;
}

std::optional<Fields> LeasedHashes::Take(const std::string& key, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = hashes_.find(key);
  if (it == hashes_.end() || it->second.first != token) return std::nullopt;
  std::optional<Fields> out(std::move(it->second.second));
  hashes_.erase(it);
  return out;
}

void LeasedHashes::Update(const std::string& key, bool leased, uint64_t token, Fields fields) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!leased) {
    hashes_.erase(key);
    return;
  }
  if (hashes_.size() >= kMax && hashes_.count(key) == 0) hashes_.clear();
  hashes_[key] = {token, std::move(fields)};
}

Result<Fields> ToFields(const Reply& r, const std::string& what) {
  if (!r.is_array() || r.elements().size() % 2 != 0) {
    return Status::Corruption(what + ": expected a field list, got " + r.Describe());
  }
  Fields out;
  const auto& e = r.elements();
  for (size_t i = 0; i + 1 < e.size(); i += 2) out[e[i].str()] = e[i + 1].str();
  return out;
}

Result<Command> DecodeFields(const Fields& f, SpecCache* cache) {
  auto spec_it = f.find("spec");
  if (spec_it == f.end()) return Status::Corruption("command hash has no spec");
  auto c = cache != nullptr ? cache->Decode(spec_it->second) : DecodeSpec(spec_it->second);
  if (!c) return c;
  auto text = [&](const char* name, std::string& out) {
    if (auto it = f.find(name); it != f.end()) out = it->second;
  };
  bool ok = true;
  auto number = [&](const char* name, auto& out) {
    if (auto it = f.find(name); it != f.end() && !it->second.empty()) {
      ok = ParseNumber(it->second, out) && ok;
    }
  };
  std::string state, evidence, escalated;
  text("state", state);
  number("seq", c->seq);
  number("attempts", c->attempts);
  number("fencing_token", c->fencing_token);
  text("lease_owner", c->lease_owner);
  number("lease_expires_ms", c->lease_expires_ms);
  text("last_error", c->last_error);
  text("external_id", c->external_id);
  text("evidence", evidence);
  text("approver", c->approver);
  text("approval_reason", c->approval_reason);
  text("escalated", escalated);
  text("escalation_reason", c->escalation_reason);
  text("cancel_reason", c->cancel_reason);
  number("replays", c->replays);
  text("replay_reason", c->replay_reason);
  number("completed_seq", c->completed_seq);
  number("created_ms", c->created_ms);
  number("updated_ms", c->updated_ms);
  if (!ok) return Status::Corruption("command " + c->command_key + " has a malformed number");
  auto parsed = ParseCommandState(state);
  if (!parsed) return Status::Corruption("command has unknown state '" + state + "'");
  c->state = *parsed;
  c->escalated = escalated == "1";
  if (!evidence.empty()) {
    c->evidence = nlohmann::json::parse(evidence, nullptr, false);
    if (c->evidence.is_discarded()) return Status::Corruption("command evidence is not JSON");
  }
  return c;
}

Result<RunRecord> DecodeRun(const RunId& id, const Fields& f) {
  RunRecord r;
  r.run = id;
  bool ok = true;
  auto number = [&](const char* name, auto& out) {
    if (auto it = f.find(name); it != f.end() && !it->second.empty()) {
      ok = ParseNumber(it->second, out) && ok;
    }
  };
  if (auto it = f.find("status"); it != f.end()) {
    auto s = ParseRunStatus(it->second);
    if (!s) return Status::Corruption("run has unknown status '" + it->second + "'");
    r.status = *s;
  }
  if (auto it = f.find("reason"); it != f.end()) r.reason = it->second;
  number("updated_ms", r.updated_ms);
  number("completed_seq", r.counters.completed_seq);
  number("replays", r.counters.replays);
  number("replay_window_start_ms", r.counters.replay_window_start_ms);
  number("replay_window_count", r.counters.replay_window_count);
  if (!ok) return Status::Corruption("run " + id.run + " has a malformed counter");
  return r;
}

Result<JournalEntry> DecodeJournal(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("journal entry is not JSON");
  JournalEntry e;
  try {
    e.position = j.at("position").get<uint64_t>();
    e.kind = j.at("kind").get<std::string>();
    e.request_hash = j.at("request_hash").get<std::string>();
    e.request = j.at("request");
    e.value = j.at("value");
  } catch (const std::exception& ex) {
    return Status::Corruption(std::string("journal entry: ") + ex.what());
  }
  return e;
}

}  // namespace taskledger::internal
