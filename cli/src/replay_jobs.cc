// ReplayJobs (see replay_jobs.h).
#include "replay_jobs.h"

#include <utility>

namespace taskledger::cli {

ReplayJobs::ReplayJobs(size_t workers, size_t window, ReplayLineFn replay)
    : window_(window < 1 ? 1 : window), replay_(std::move(replay)) {
  if (workers <= 1) return;  // inline: Submit replays on the caller's thread
  threads_.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads_.emplace_back([this, w] { Work(w); });
}

ReplayJobs::~ReplayJobs() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  queued_.notify_all();
  finished_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReplayJobs::Submit(ReplayWork work, const std::string& key) {
  auto job = std::make_shared<Job>();
  job->work.emplace(std::move(work));
  if (!key.empty()) {
    std::shared_ptr<Job>& last = last_of_key_[key];
    job->after = std::move(last);
    last = job;
  }
  in_flight_.push_back(job);
  if (threads_.empty()) {
    // One worker: lines run in order here, so an earlier same-key line is done.
    job->after.reset();
    job->done = replay_(*job->work, 0);
    job->work.reset();
    job->finished = true;
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(job));
  }
  queued_.notify_one();
}

std::optional<ReplayDone> ReplayJobs::Next(bool wait) {
  if (in_flight_.empty()) return std::nullopt;
  std::shared_ptr<Job> job = in_flight_.front();
  {
    std::unique_lock lock(mu_);
    if (!wait && !job->finished) return std::nullopt;
    finished_.wait(lock, [&] { return job->finished; });
  }
  in_flight_.pop_front();
  return std::move(job->done);
}

void ReplayJobs::Work(size_t worker) {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      // Lines are taken in input order, so the earlier line of the same key
      // is already on a worker: waiting for it cannot deadlock.
      if (job->after) {
        finished_.wait(lock, [&] { return stopping_ || job->after->finished; });
        if (stopping_) return;
        job->after.reset();
      }
    }
    ReplayDone done = replay_(*job->work, worker);
    job->work.reset();  // free the parsed conversation on this thread
    {
      std::lock_guard lock(mu_);
      job->done = std::move(done);
      job->finished = true;
    }
    finished_.notify_all();
  }
}

}  // namespace taskledger::cli
