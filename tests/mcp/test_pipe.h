// ClosedOnExecPipe: the proxy tests' pipes, made with POSIX calls only
// (pipe, then fcntl(FD_CLOEXEC) on each end) so the tests build where
// pipe2 does not exist (macOS; -DTASKLEDGER_POSIX_ONLY=ON). Tests only.
#pragma once

#include <fcntl.h>
#include <unistd.h>

namespace taskledger::testing {

// true with both ends close-on-exec; false (both closed) on failure.
inline bool ClosedOnExecPipe(int fds[2]) {
  if (::pipe(fds) != 0) return false;
  if (::fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 && ::fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0) {
    return true;
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return false;
}

}  // namespace taskledger::testing
