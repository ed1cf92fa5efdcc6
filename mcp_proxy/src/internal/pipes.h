// Pipe helpers shared by the proxy's transports: close-on-exec pipes and a
// blocking write of a whole buffer.
//
// Portability: TASKLEDGER_LINUX_CALLS is 1 on Linux, where the proxy uses
// pipe2 (atomic close-on-exec), prctl(PR_SET_PDEATHSIG) and close_range;
// elsewhere, or when built with -DTASKLEDGER_POSIX_ONLY, plain POSIX stands
// in: pipe + fcntl, and no kill-on-parent-death (a killed proxy can leave
// its server running until the server notices its closed stdin).
#pragma once

#if defined(__linux__) && !defined(TASKLEDGER_POSIX_ONLY)
#define TASKLEDGER_LINUX_CALLS 1
#else
#define TASKLEDGER_LINUX_CALLS 0
#endif

#include <string_view>

namespace taskledger::mcp::proxy_internal {

// A pipe with FD_CLOEXEC on both ends; false (errno set) on failure.
bool MakePipe(int fds[2]);
// Writes all of `data` to a blocking `fd`, retrying on EINTR and short
// writes; false when the reader is gone or another error occurs.
bool WriteAll(int fd, std::string_view data);

}  // namespace taskledger::mcp::proxy_internal
