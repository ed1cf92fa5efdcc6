// Forced into every proxy source (and the proxy's tests) by
// -DTASKLEDGER_POSIX_ONLY=ON: the POSIX headers that declare Linux
// extensions are read first, then the Linux-only names are poisoned, so a
// use of any of them anywhere after is a compile error. This is how a Linux
// CI job keeps the code that must build on macOS free of Linux-only calls.
#pragma once

// Read before the poison: glibc declares the extensions in these.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

// Functions Linux has and POSIX (or macOS) has not.
#pragma GCC poison pipe2 dup3 accept4 close_range prctl ppoll
#pragma GCC poison epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait
#pragma GCC poison signalfd eventfd timerfd_create timerfd_settime inotify_init inotify_init1
#pragma GCC poison memfd_create pidfd_open pidfd_send_signal getrandom

// Flags Linux has and macOS has not (glibc defines each as a macro naming an
// enumerator: the macro goes, then the name is poisoned).
#undef SOCK_CLOEXEC
#undef SOCK_NONBLOCK
#undef MSG_NOSIGNAL
#pragma GCC poison SOCK_CLOEXEC SOCK_NONBLOCK MSG_NOSIGNAL PR_SET_PDEATHSIG
