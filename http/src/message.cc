// Header look-up for http::Request / ClientResponse (message.h).
#include "taskledger/http/message.h"

#include <strings.h>

namespace taskledger::http {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

std::string FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (SameName(key, name)) return value;
  }
  return {};
}

bool HasHeader(const Headers& headers, std::string_view name) {
  for (const auto& header : headers) {
    if (SameName(header.first, name)) return true;
  }
  return false;
}

}  // namespace taskledger::http
