// Helpers for the CLI tests (see cli_runner.h).
#include "cli/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace taskledger::testing {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

struct TempRoot {
  std::string path;
  TempRoot() {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/tl_cli_XXXXXX";
    path = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

nlohmann::json CliRun::LastJson() const {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return nlohmann::json::parse(last, nullptr, false);
}

std::string TempDir() {
  static TempRoot root;
  return root.path;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CliRun RunCli(const std::vector<std::string>& args) {
  static int n = 0;
  const std::string base = TempDir() + "/run" + std::to_string(++n);
  std::string cmd = Quote(TASKLEDGER_CLI);
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " >" + Quote(base + ".out") + " 2>" + Quote(base + ".err") + " </dev/null";
  int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(base + ".out");
  r.err = ReadFile(base + ".err");
  return r;
}

std::string ShopTraceLine(const std::string& conversation) {
  return R"({"conversation":")" + conversation +
         R"(","events":[)"
         R"({"type":"call","id":"c0","tool":"get_order","arguments":{"order_id":"#W1"}},)"
         R"({"type":"result","id":"c0","output":{"order_id":"#W1","status":"pending"}},)"
         R"({"type":"user","text":"yes"},)"
         R"({"type":"call","id":"c1","tool":"cancel_order","arguments":{"order_id":"#W1"},"writes":true,"expect":{"decision":"allow"}},)"
         R"({"type":"result","id":"c1","output":{"order_id":"#W1","status":"cancelled"}},)"
         R"({"type":"call","id":"c2","tool":"cancel_order","arguments":{"order_id":"#W1"},"writes":true,)"
         R"("expect":{"decision":"deny","rule":"shop.confirmed"}}]})";
}

}  // namespace taskledger::testing
