// Pipe helpers shared by the proxy's transports: close-on-exec pipes and a
// blocking write of a whole buffer.
#pragma once

#include <string_view>

#include "internal/platform.h"

namespace taskledger::mcp::proxy_internal {

// A pipe with FD_CLOEXEC on both ends; false (errno set) on failure.
bool MakePipe(int fds[2]);
// Writes all of `data` to a blocking `fd`, retrying on EINTR and short
// writes; false when the reader is gone or another error occurs.
bool WriteAll(int fd, std::string_view data);

}  // namespace taskledger::mcp::proxy_internal
