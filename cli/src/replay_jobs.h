// ReplayJobs: the worker threads of `taskledger replay --jobs N`. Conversations
// are independent, so each trace line is parsed and replayed on whichever
// worker is free, while the caller only reads lines and takes the results
// back strictly in input order: the output of N workers is byte for byte that
// of one (timings aside).
//
// Order between lines that name the same conversation is kept: after parsing,
// each line claims its key (the stored conversation id) in input order, and a
// line whose key an earlier line already claimed starts only once that earlier
// line is done, so it sees the store exactly as a serial replay would (and is
// skipped as "already has turns" the same way).
//
// A line may stop the run (--strict, a fatal error): lines after it that have
// not started replaying are dropped (their results are empty and never taken
// back by a caller that stops there); lines already replaying finish.
//
// At most `window` lines are in flight (submitted, not yet taken back), which
// bounds the memory held by lines and finished output. With one worker nothing
// runs on another thread: Submit parses and replays the line at once on the
// caller's thread. Destroying the pool stops it: lines not yet started are
// dropped, lines being replayed finish first. Submit/Next/Full: caller's
// thread only.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "taskledger/base/conversation_id.h"
#include "taskledger/session/replay_tally.h"
#include "taskledger/session/trace.h"

namespace taskledger::cli {

// One trace line to replay.
struct ReplayWork {
  std::string where;         // "FILE:LINE"
  Result<std::string> text;  // the line as read, or why it could not be read
  // Set by the parse step on the worker: the line's conversation or why it
  // could not be parsed, and the stored id (when readable).
  std::optional<Result<TraceConversation>> conversation;
  ConversationId id;
};

// What the parse step tells the pool about a line.
struct ReplayParsed {
  std::string key;    // the stored conversation id; empty: orders after nothing
  bool stop = false;  // the run stops at this line (nothing later is replayed)
};

// What one line produced, handed back in input order.
struct ReplayDone {
  std::string out;        // stdout text: the decision lines
  std::string err;        // stderr text: why the line failed
  ReplayTally tally;      // the line's conversation, or its failure
  bool replayed = false;  // the conversation was replayed (work.id)
  bool failed = false;    // unreadable or not replayed (counted in tally)
  bool fatal = false;     // the replay must stop: exit 2 (a session could not be opened)
  bool stop = false;      // the run stops at this line (fatal, or failed under --strict)
  ConversationId id;
};

// Parses one line (fills work.conversation and work.id), on any worker.
using ReplayParseFn = std::function<ReplayParsed(ReplayWork& work)>;
// Replays one parsed line on worker `worker` (0 .. workers-1).
using ReplayLineFn = std::function<ReplayDone(ReplayWork& work, size_t worker)>;

class ReplayJobs {
 public:
  ReplayJobs(size_t workers, size_t window, ReplayParseFn parse, ReplayLineFn replay);
  ~ReplayJobs();
  ReplayJobs(const ReplayJobs&) = delete;
  ReplayJobs& operator=(const ReplayJobs&) = delete;

  // Queues a line: it is parsed, ordered after every earlier line with the
  // same key, and replayed, unless an earlier line stopped the run.
  void Submit(ReplayWork work);
  // The oldest line's result: waits for it if `wait`, else only if it is
  // done; nullopt when nothing is in flight (or, without `wait`, not done).
  std::optional<ReplayDone> Next(bool wait);
  // Whether `window` lines are in flight (take one back before submitting).
  bool Full() const { return in_flight_.size() >= window_; }

 private:
  struct Job {
    uint64_t seq = 0;                // input order, from 0
    std::optional<ReplayWork> work;  // emptied once replayed
    std::shared_ptr<Job> after;      // the earlier line with the same key, if any
    ReplayDone done;
    bool finished = false;
  };
  // Claims the parsed line's key in input order (waits for the earlier
  // lines' claims); false if the pool is being destroyed. Then whether the
  // line is to be replayed (no earlier line stopped the run). mu_ held.
  bool Claim(std::unique_lock<std::mutex>& lock, Job& job, const std::shared_ptr<Job>& self,
             const ReplayParsed& parsed);
  void Finish(Job& job, ReplayDone done);  // mu_ held
  void Work(size_t worker);

  const size_t window_;
  ReplayParseFn parse_;
  ReplayLineFn replay_;
  std::deque<std::shared_ptr<Job>> in_flight_;  // caller's thread only
  uint64_t submitted_ = 0;                      // caller's thread only
  std::mutex mu_;
  // The last line of each key, for the order between lines of one
  // conversation. Guarded by mu_.
  std::unordered_map<std::string, std::shared_ptr<Job>> last_of_key_;
  uint64_t next_claim_ = 0;                 // the seq whose claim is next; guarded by mu_
  uint64_t stop_at_ = UINT64_MAX;           // the first line that stopped the run; guarded by mu_
  std::condition_variable queued_;          // workers wait for work
  std::condition_variable claimed_;         // parsed lines wait for their turn to claim
  std::condition_variable finished_;        // the caller and same-key lines wait for a job
  std::deque<std::shared_ptr<Job>> queue_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace taskledger::cli
