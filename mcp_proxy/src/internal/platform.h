// Where the proxy's process and I/O code may use Linux-only calls.
//
// TASKLEDGER_LINUX_CALLS is 1 on Linux, where the proxy uses three calls
// POSIX lacks: pipe2(O_CLOEXEC) (close-on-exec from birth, pipes.cc),
// prctl(PR_SET_PDEATHSIG) (the server is killed with the proxy, process.cc)
// and close_range (the server inherits only stdin/stdout/stderr,
// process.cc). It is 0 elsewhere (macOS, the BSDs) and when the build is
// configured with -DTASKLEDGER_POSIX_ONLY=ON, which also compiles the proxy
// with posix_only.h so that any Linux-only call is a compile error. With 0,
// plain POSIX stands in: pipe + fcntl(FD_CLOEXEC), a close-on-exec loop over
// the descriptors below sysconf(_SC_OPEN_MAX), and a getppid() check instead
// of a kill-on-parent-death (a proxy killed with SIGKILL can leave its server
// running until the server reads EOF on its stdin).
//
// Windows would replace process.cc and pipes.cc (CreateProcess, anonymous
// pipes, a job object for kill-on-close); the rest of the proxy reaches the
// server only through the Upstream interface (upstream.h) and descriptors.
#pragma once

#if defined(__linux__) && !defined(TASKLEDGER_POSIX_ONLY)
#define TASKLEDGER_LINUX_CALLS 1
#else
#define TASKLEDGER_LINUX_CALLS 0
#endif
