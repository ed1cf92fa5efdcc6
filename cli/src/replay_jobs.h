// ReplayJobs: the worker threads of `taskledger replay --jobs N`. Conversations
// are independent, so each trace line is replayed on whichever worker is
// free, while the caller takes the results back strictly in input order: the
// output of N workers is byte for byte that of one (timings aside).
//
// Order between lines that name the same conversation is kept: a line whose
// key (the stored conversation id) an earlier line already used starts only
// once that earlier line is done, so it sees the store exactly as a serial
// replay would (and is skipped as "already has turns" the same way).
//
// At most `window` lines are in flight (submitted, not yet taken back), which
// bounds the memory held by parsed conversations and finished output. With one
// worker nothing runs on another thread: Submit replays the line at once on
// the caller's thread. Destroying the pool stops it: lines not yet started are
// dropped, lines being replayed finish first. Submit/Next/Full: caller's
// thread only.
#pragma once

#include <condition_variable>
#include <cstddef>
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
  std::string where;                       // "FILE:LINE"
  Result<TraceConversation> conversation;  // or why the line could not be read
  ConversationId id;                       // the stored id (when readable)
};

// What one line produced, handed back in input order.
struct ReplayDone {
  std::string out;        // stdout text: the decision lines
  std::string err;        // stderr text: why the line failed
  ReplayTally tally;      // the line's conversation, or its failure
  bool replayed = false;  // the conversation was replayed (work.id)
  bool failed = false;    // unreadable or not replayed (counted in tally)
  bool fatal = false;     // the replay must stop: exit 2 (a session could not be opened)
  ConversationId id;
};

// Replays one line on worker `worker` (0 .. workers-1).
using ReplayLineFn = std::function<ReplayDone(ReplayWork& work, size_t worker)>;

class ReplayJobs {
 public:
  ReplayJobs(size_t workers, size_t window, ReplayLineFn replay);
  ~ReplayJobs();
  ReplayJobs(const ReplayJobs&) = delete;
  ReplayJobs& operator=(const ReplayJobs&) = delete;

  // Queues a line; `key` orders it after every earlier line with the same
  // non-empty key.
  void Submit(ReplayWork work, const std::string& key);
  // The oldest line's result: waits for it if `wait`, else only if it is
  // done; nullopt when nothing is in flight (or, without `wait`, not done).
  std::optional<ReplayDone> Next(bool wait);
  // Whether `window` lines are in flight (take one back before submitting).
  bool Full() const { return in_flight_.size() >= window_; }

 private:
  struct Job {
    std::optional<ReplayWork> work;  // emptied once replayed
    std::shared_ptr<Job> after;      // the earlier line with the same key, if any
    ReplayDone done;
    bool finished = false;
  };
  void Work(size_t worker);

  const size_t window_;
  ReplayLineFn replay_;
  std::deque<std::shared_ptr<Job>> in_flight_;  // caller's thread only
  // The last line of each key, for the order between lines of one conversation.
  std::unordered_map<std::string, std::shared_ptr<Job>> last_of_key_;
  std::mutex mu_;
  std::condition_variable queued_;          // workers wait for work
  std::condition_variable finished_;        // the caller and same-key lines wait for a job
  std::deque<std::shared_ptr<Job>> queue_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace taskledger::cli
