// Decoding of RedisCommandStore's replies (see internal/command_redis_decode.h):
// field lists, command hashes, run meta hashes and journal entries, each a
// Corruption naming what is wrong rather than a partly filled record; a
// command's decision from the hash's "decision" field (its CBOR, when kept
// apart from the spec) or else from the spec; and the one-entry cache of the
// last command spec decoded. Thread-safe.
#include "internal/command_redis_decode.h"

#include <charconv>
#include <cmath>
#include <memory>
#include <vector>

#include "taskledger/ledger/decision_bytes.h"

namespace taskledger::internal {
namespace {

template <class T>
bool ParseNumber(const std::string& s, T& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<Command> DecodeStoredSpec(const std::string& spec, std::string_view decision) {
  auto json = nlohmann::json::parse(spec, nullptr, false);
  if (json.is_discarded()) return Status::Corruption("command spec is not JSON");
  auto c = DecodeCommand(json);
  if (!c || decision.empty()) return c;
  auto record = DecodeDecisionBytes(decision);
  if (!record) {
    return Status::Corruption("command " + c->command_key +
                              " has a decision field that is not a decision record (" +
                              record.error().message() + ")");
  }
  c->decision = CommandDecision(std::make_shared<const DecisionRecord>(std::move(record).value()));
  return c;
}

void SpecCache::Remember(std::string spec, std::string decision, Command decoded) {
  std::lock_guard<std::mutex> lock(mu_);
  text_ = std::move(spec);
  decision_ = std::move(decision);
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

Result<Command> SpecCache::Decode(const std::string& spec, std::string_view decision) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!text_.empty() && text_ == spec && decision_ == decision) return decoded_;
  }
  auto c = DecodeStoredSpec(spec, decision);
  if (!c) return c;
  std::lock_guard<std::mutex> lock(mu_);
  text_ = spec;
  decision_ = decision;
  decoded_ = *c;
  return c;
}

std::optional<Command> LeasedHashes::Take(const std::string& key, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = hashes_.find(key);
  if (it == hashes_.end() || it->second.first != token) return std::nullopt;
  std::optional<Command> out(std::move(it->second.second));
  hashes_.erase(it);
  return out;
}

void LeasedHashes::Update(const std::string& key, const Command& command) {
  std::lock_guard<std::mutex> lock(mu_);
  if (command.state != CommandState::kLeased) {
    hashes_.erase(key);
    return;
  }
  if (hashes_.size() >= kMax && hashes_.count(key) == 0) hashes_.clear();
  hashes_[key] = {command.fencing_token, command};
}

void LeasedHashes::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  hashes_.erase(key);
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

namespace {

// The mutable fields of a command hash; kOther for any other name (spec,
// command_key, decision, a later release's).
enum class HashField {
  kOther,
  kState,
  kSeq,
  kAttempts,
  kFencingToken,
  kLeaseOwner,
  kLeaseExpiresMs,
  kLastError,
  kExternalId,
  kEvidence,
  kApprover,
  kApprovalReason,
  kEscalated,
  kEscalationReason,
  kCancelReason,
  kReplays,
  kReplayReason,
  kCompletedSeq,
  kCreatedMs,
  kUpdatedMs,
};

// By length first: one or a few comparisons per name instead of one per
// known field (a write reads about 20 field names back).
HashField FieldOf(std::string_view n) {
  using F = HashField;
  switch (n.size()) {
    case 3:
      if (n == "seq") return F::kSeq;
      break;
    case 5:
      if (n == "state") return F::kState;
      break;
    case 7:
      if (n == "replays") return F::kReplays;
      break;
    case 8:
      if (n == "attempts") return F::kAttempts;
      if (n == "approver") return F::kApprover;
      if (n == "evidence") return F::kEvidence;
      break;
    case 9:
      if (n == "escalated") return F::kEscalated;
      break;
    case 10:
      if (n == "updated_ms") return F::kUpdatedMs;
      if (n == "created_ms") return F::kCreatedMs;
      if (n == "last_error") return F::kLastError;
      break;
    case 11:
      if (n == "lease_owner") return F::kLeaseOwner;
      if (n == "external_id") return F::kExternalId;
      break;
    case 13:
      if (n == "fencing_token") return F::kFencingToken;
      if (n == "completed_seq") return F::kCompletedSeq;
      if (n == "cancel_reason") return F::kCancelReason;
      if (n == "replay_reason") return F::kReplayReason;
      break;
    case 15:
      if (n == "approval_reason") return F::kApprovalReason;
      break;
    case 16:
      if (n == "lease_expires_ms") return F::kLeaseExpiresMs;
      break;
    case 17:
      if (n == "escalation_reason") return F::kEscalationReason;
      break;
    default:
      break;
  }
  return F::kOther;
}

// The mutable fields of a command hash, read into `c` pair by pair (no map):
// a number or the evidence that does not parse, or a state that is not one,
// is a Corruption (in that order of precedence, as a whole hash is judged);
// names it does not know (spec, command_key, later fields) are skipped.
Status ApplyFieldList(const std::vector<Reply>& e, Command& c, bool need_state) {
  using F = HashField;
  bool ok = true, have_state = false;
  const std::string* state = nullptr;
  const std::string* evidence = nullptr;
  auto number = [&](const std::string& value, auto& out) {
    if (!value.empty()) ok = ParseNumber(value, out) && ok;
  };
  for (size_t i = 0; i + 1 < e.size(); i += 2) {
    const std::string& value = e[i + 1].str();
    switch (FieldOf(e[i].str())) {
      case F::kState:
        state = &value;
        have_state = true;
        break;
      case F::kSeq:
        number(value, c.seq);
        break;
      case F::kAttempts:
        number(value, c.attempts);
        break;
      case F::kFencingToken:
        number(value, c.fencing_token);
        break;
      case F::kLeaseOwner:
        c.lease_owner = value;
        break;
      case F::kLeaseExpiresMs:
        number(value, c.lease_expires_ms);
        break;
      case F::kLastError:
        c.last_error = value;
        break;
      case F::kExternalId:
        c.external_id = value;
        break;
      case F::kEvidence:
        evidence = &value;
        break;
      case F::kApprover:
        c.approver = value;
        break;
      case F::kApprovalReason:
        c.approval_reason = value;
        break;
      case F::kEscalated:
        c.escalated = value == "1";
        break;
      case F::kEscalationReason:
        c.escalation_reason = value;
        break;
      case F::kCancelReason:
        c.cancel_reason = value;
        break;
      case F::kReplays:
        number(value, c.replays);
        break;
      case F::kReplayReason:
        c.replay_reason = value;
        break;
      case F::kCompletedSeq:
        number(value, c.completed_seq);
        break;
      case F::kCreatedMs:
        number(value, c.created_ms);
        break;
      case F::kUpdatedMs:
        number(value, c.updated_ms);
        break;
      case F::kOther:
        break;
    }
  }
  if (!ok) return Status::Corruption("command " + c.command_key + " has a malformed number");
  if (have_state || need_state) {
    const std::string none;
    auto parsed = ParseCommandState(state != nullptr ? *state : none);
    if (!parsed) {
      return Status::Corruption("command has unknown state '" + (state ? *state : none) + "'");
    }
    c.state = *parsed;
  }
  if (evidence != nullptr && !evidence->empty()) {
    c.evidence = nlohmann::json::parse(*evidence, nullptr, false);
    if (c.evidence.is_discarded()) return Status::Corruption("command evidence is not JSON");
  }
  return Status::Ok();
}

Status CheckFieldList(const Reply& r, const std::string& what) {
  if (!r.is_array() || r.elements().size() % 2 != 0) {
    return Status::Corruption(what + ": expected a field list, got " + r.Describe());
  }
  return Status::Ok();
}

}  // namespace

Result<Command> DecodeHash(const Reply& r, const std::string& what, SpecCache* cache) {
  return DecodeHash(r, what, [cache](const std::string& spec, std::string_view decision) {
    return cache != nullptr ? cache->Decode(spec, decision) : DecodeStoredSpec(spec, decision);
  });
}

Result<Command> DecodeHash(const Reply& r, const std::string& what, const SpecDecoder& spec_of) {
  if (Status s = CheckFieldList(r, what); !s.ok()) return s;
  const auto& e = r.elements();
  const std::string* spec = nullptr;
  std::string_view decision;
  for (size_t i = 0; i + 1 < e.size(); i += 2) {
    const std::string& name = e[i].str();
    if (name == "spec") spec = &e[i + 1].str();
    if (name == "decision") decision = e[i + 1].str();
  }
  if (spec == nullptr) return Status::Corruption("command hash has no spec");
  auto c = spec_of(*spec, decision);
  if (!c) return c;
  c->escalated = false;  // "1" in the hash when escalated; absent: not
  if (Status s = ApplyFieldList(e, *c, /*need_state=*/true); !s.ok()) return s;
  return c;
}

Status ApplyHashFields(const Reply& r, const std::string& what, Command& c) {
  if (Status s = CheckFieldList(r, what); !s.ok()) return s;
  return ApplyFieldList(r.elements(), c, /*need_state=*/false);
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
