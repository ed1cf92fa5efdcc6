// ServeProcess (serve_process.h): fork/exec of the built CLI, its stderr on a
// pipe read until the listening line, an http::Client on the bound port.
#include "serve_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>

#include <catch2/catch.hpp>

namespace taskledger::serve_test {
namespace {

pid_t Spawn(const std::vector<std::string>& args, int& err_fd) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 2);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    std::string bin = TASKLEDGER_CLI;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  err_fd = fds[0];
  return pid;
}

// Reads what is available on `fd` within `ms`; false at end of file.
bool ReadSome(int fd, std::string& into, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return true;
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return false;
  into.append(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace

ServeProcess::ServeProcess(std::vector<std::string> args, bool add_listen) {
  args.insert(args.begin(), "serve");
  if (add_listen) {
    args.push_back("--listen");
    args.push_back("127.0.0.1:0");
  }
  pid_ = Spawn(args, err_fd_);
  const std::regex listening(R"(listening on https?://127\.0\.0\.1:([0-9]+)[^\n]*\n)");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::smatch m;
  while (!std::regex_search(err_, m, listening)) {
    INFO("stderr so far: " << err_);
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    REQUIRE(ReadSome(err_fd_, err_, 100));
  }
  port_ = std::stoi(m[1].str());
  line_ = m[0].str();
  auto client = http::Client::Open("http://127.0.0.1:" + std::to_string(port_));
  REQUIRE(client.has_value());
  client_ = std::move(client).value();
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) Stop();
}

Reply ServeProcess::Send(const std::string& method, const std::string& path,
                         const std::string& body, const http::Headers& headers) {
  REQUIRE(client_ != nullptr);  // not after Stop()
  auto r = client_->Send(method, path, headers, body, body.empty() ? "" : "application/json");
  REQUIRE(r.has_value());
  Reply out;
  out.status = r->status;
  out.raw = r->body;
  out.body = nlohmann::json::parse(r->body, nullptr, false);
  return out;
}

Reply ServeProcess::Post(const std::string& path, const nlohmann::json& body,
                         const std::string& token) {
  http::Headers h;
  if (!token.empty()) h.emplace_back("Authorization", "Bearer " + token);
  return Send("POST", path, body.dump(), h);
}

void ServeProcess::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

bool ServeProcess::WaitForStderr(const std::string& needle, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (err_.find(needle) == std::string::npos) {
    if (pid_ <= 0 || std::chrono::steady_clock::now() >= deadline) return false;
    if (!ReadSome(err_fd_, err_, 50)) return err_.find(needle) != std::string::npos;
  }
  return true;
}

void ServeProcess::Kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  while (ReadSome(err_fd_, err_, 0)) {
  }
  ::close(err_fd_);
}

int ServeProcess::Stop() {
  if (pid_ <= 0) return -1;
  // Close the kept-alive connection first: the server lets an idle one sit
  // out its keep-alive timeout (5 s) before it finishes stopping.
  client_.reset();
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  while (ReadSome(err_fd_, err_, 0)) {
  }
  ::close(err_fd_);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ServeProcess::Stderr() {
  if (pid_ > 0) (void)ReadSome(err_fd_, err_, 0);
  return err_;
}

int RunServeToExit(const std::vector<std::string>& args, std::string& err) {
  std::vector<std::string> full = args;
  full.insert(full.begin(), "serve");
  int fd = -1;
  pid_t pid = Spawn(full, fd);
  while (ReadSome(fd, err, 20'000)) {
  }
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace taskledger::serve_test
