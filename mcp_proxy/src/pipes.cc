// Pipe helpers (see internal/pipes.h).
#include "internal/pipes.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace taskledger::mcp::proxy_internal {

bool MakePipe(int fds[2]) {
#if TASKLEDGER_LINUX_CALLS
  return ::pipe2(fds, O_CLOEXEC) == 0;
#else
  // Not atomic: a fork on another thread in between can inherit these; the
  // child's loop in ServerProcess::Start marks everything close-on-exec.
  if (::pipe(fds) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (::fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0) {
      int saved = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      errno = saved;
      return false;
    }
  }
  return true;
#endif
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace taskledger::mcp::proxy_internal
