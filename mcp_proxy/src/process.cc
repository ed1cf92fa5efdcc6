// ServerProcess (see internal/process.h): fork/exec of the MCP
// server, and stopping it for certain.
#include "internal/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "internal/pipes.h"
#include "internal/platform.h"
#if TASKLEDGER_LINUX_CALLS
#include <sys/prctl.h>
#endif

namespace taskledger::mcp::proxy_internal {
namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

int SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return -1;
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  return flags;
}

Result<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return Status::InvalidArgument("no server command given");
  // Everything the child touches between fork and exec is prepared here: only
  // async-signal-safe calls may run there.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int to_child[2], from_child[2], exec_error[2];
  if (!MakePipe(to_child)) return Status::Unavailable(std::strerror(errno));
  if (!MakePipe(from_child)) {
    int e = errno;
    ::close(to_child[0]);
    ::close(to_child[1]);
    return Status::Unavailable(std::strerror(e));
  }
  if (!MakePipe(exec_error)) {
    int e = errno;
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) ::close(fd);
    return Status::Unavailable(std::strerror(e));
  }
  const pid_t parent = ::getpid();
#if !TASKLEDGER_LINUX_CALLS
  // sysconf is not async-signal-safe: the child's bound is taken here.
  long max_fd = ::sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
#endif
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd :
         {to_child[0], to_child[1], from_child[0], from_child[1], exec_error[0], exec_error[1]})
      ::close(fd);
    return Status::Unavailable(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
#if TASKLEDGER_LINUX_CALLS
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    // The proxy died before prctl (or, without it, before the exec).
    if (::getppid() != parent) ::_exit(127);
    // The proxy ignores SIGPIPE; an ignored signal stays ignored across exec,
    // and a server should see the default.
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    // Whatever else the proxy holds open (store connections, the client's
    // other descriptors) is none of the server's business.
#if TASKLEDGER_LINUX_CALLS
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
#else
    for (long fd = 3; fd < max_fd; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
#endif
    ::execvp(args[0], args.data());
    int e = errno;
    ssize_t ignored = ::write(exec_error[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  ::close(exec_error[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_error[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(exec_error[0]);
  auto process = std::unique_ptr<ServerProcess>(new ServerProcess(pid, to_child[1], from_child[0]));
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    process->Stop(0);
    return Status::Unavailable("cannot start MCP server '" + argv[0] +
                               "': " + std::strerror(child_errno));
  }
  SetNonBlocking(process->stdin_fd_);
  SetNonBlocking(process->stdout_fd_);
  return process;
}

ServerProcess::~ServerProcess() { Stop(0); }

void ServerProcess::CloseStdin() { CloseFd(stdin_fd_); }
void ServerProcess::CloseStdout() { CloseFd(stdout_fd_); }

bool ServerProcess::Exited() {
  if (reaped_) return true;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    wait_status_ = r == pid_ ? status : -1;
  }
  return reaped_;
}

bool ServerProcess::WaitFor(int64_t ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!Exited()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void ServerProcess::Stop(int64_t grace_ms) {
  CloseStdin();  // a well-behaved stdio server exits on EOF
  if (!WaitFor(grace_ms)) {
    ::kill(-pid_, SIGTERM);
    ::kill(pid_, SIGTERM);
    if (!WaitFor(grace_ms)) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      while (!Exited()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Whatever the server left behind in its group goes with it.
  ::kill(-pid_, SIGKILL);
  CloseStdout();
}

std::string ServerProcess::Describe() const {
  if (!reaped_) return "still running";
  if (wait_status_ < 0) return "exited (status unknown)";
  if (WIFEXITED(wait_status_))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) {
    int sig = WTERMSIG(wait_status_);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "stopped";
}

}  // namespace taskledger::mcp::proxy_internal
