// ReplayJobs (see replay_jobs.h).
#include "replay_jobs.h"

#include <utility>

namespace taskledger::cli {

ReplayJobs::ReplayJobs(size_t workers, size_t window, ReplayParseFn parse, ReplayLineFn replay)
    : window_(window < 1 ? 1 : window), parse_(std::move(parse)), replay_(std::move(replay)) {
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
  claimed_.notify_all();
  finished_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReplayJobs::Submit(ReplayWork work) {
  auto job = std::make_shared<Job>();
  job->seq = submitted_++;
  job->work.emplace(std::move(work));
  in_flight_.push_back(job);
  if (threads_.empty()) {
    // One worker: lines run in order here, so an earlier same-key line is done.
    const ReplayParsed parsed = parse_(*job->work);
    std::unique_lock lock(mu_);
    Claim(lock, *job, job, parsed);
    job->after.reset();
    const bool run = job->seq <= stop_at_;
    lock.unlock();
    ReplayDone done = run ? replay_(*job->work, 0) : ReplayDone{};
    job->work.reset();
    lock.lock();
    Finish(*job, std::move(done));
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

bool ReplayJobs::Claim(std::unique_lock<std::mutex>& lock, Job& job,
                       const std::shared_ptr<Job>& self, const ReplayParsed& parsed) {
  // Lines are taken from the queue in input order, so every earlier line is
  // already on a worker (or done) and claims without waiting for this one.
  claimed_.wait(lock, [&] { return stopping_ || next_claim_ == job.seq; });
  if (stopping_) return false;
  if (!parsed.key.empty()) {
    std::shared_ptr<Job>& last = last_of_key_[parsed.key];
    job.after = std::move(last);
    last = self;
  }
  if (parsed.stop && job.seq < stop_at_) stop_at_ = job.seq;
  ++next_claim_;
  claimed_.notify_all();
  return true;
}

void ReplayJobs::Finish(Job& job, ReplayDone done) {
  if (done.stop && job.seq < stop_at_) stop_at_ = job.seq;
  job.done = std::move(done);
  job.finished = true;
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
    }
    // Parsing needs nothing from other lines: it runs outside the lock.
    const ReplayParsed parsed = parse_(*job->work);
    bool run = false;
    {
      std::unique_lock lock(mu_);
      if (!Claim(lock, *job, job, parsed)) return;
      // The earlier line of the same key claimed first, so it is on a
      // worker (or done): waiting for it cannot deadlock.
      if (job->after) {
        finished_.wait(lock, [&] { return stopping_ || job->after->finished; });
        if (stopping_) return;
        job->after.reset();
      }
      // An earlier line may have stopped the run meanwhile.
      run = job->seq <= stop_at_;
    }
    ReplayDone done = run ? replay_(*job->work, worker) : ReplayDone{};
    job->work.reset();  // free the line and its conversation on this thread
    {
      std::lock_guard lock(mu_);
      Finish(*job, std::move(done));
    }
    finished_.notify_all();
  }
}

}  // namespace taskledger::cli
