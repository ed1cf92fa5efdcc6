// FileEffectService: atomic, durable, idempotent effects on the local file
// system (see the header for the protocol).
#include "file_effect_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "taskledger/commands/command.h"

namespace taskledger::testing {
namespace {

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::optional<Effect> ReadEffect(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return Effect{j.value("key", ""), j.value("target", ""), j.value("id", "")};
}

}  // namespace

std::string FileEffectService::PathOf(const std::string& key) const {
  return dir_ + "/effect-" + Sha256Hex(key);
}

std::optional<std::string> FileEffectService::Apply(const std::string& key,
                                                    const std::string& target) {
  const std::string final_path = PathOf(key);
  if (auto existing = ReadEffect(final_path)) return existing->external_id;
  const std::string id = "ext-" + Sha256Hex(key).substr(0, 16);
  const std::string tmp = dir_ + "/tmp-" + std::to_string(::getpid()) + "-" + Sha256Hex(key);
  nlohmann::json content = {{"key", key}, {"target", target}, {"id", id}};
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return std::nullopt;
  bool ok = WriteAll(fd, content.dump()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return std::nullopt;
  }
  // link() fails with EEXIST if the key was applied meanwhile: never two effects.
  int linked = ::link(tmp.c_str(), final_path.c_str());
  int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && link_errno != EEXIST) return std::nullopt;
  SyncDir(dir_);
  auto stored = ReadEffect(final_path);
  if (!stored) return std::nullopt;
  return stored->external_id;
}

std::optional<Effect> FileEffectService::Lookup(const std::string& key) const {
  return ReadEffect(PathOf(key));
}

std::vector<Effect> FileEffectService::All() const {
  std::vector<Effect> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.path().filename().string().rfind("effect-", 0) != 0) continue;
    if (auto e = ReadEffect(entry.path().string())) out.push_back(*e);
  }
  return out;
}

}  // namespace taskledger::testing
