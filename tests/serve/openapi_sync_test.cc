// docs/openapi.yaml and the routes the service answers stay the same set:
// every path and method the file describes is a route (serve::Service::Routes,
// which the listener registers), and every route is in the file.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "taskledger/serve/service.h"

TEST_CASE("serve: docs/openapi.yaml lists exactly the routes the service answers", "[serve]") {
  std::ifstream in(std::string(TASKLEDGER_SOURCE_DIR) + "/docs/openapi.yaml");
  REQUIRE(in.good());
  const std::regex path_line(R"(^  (/[A-Za-z0-9/_-]*):\s*$)");
  const std::regex method_line(R"(^    (get|post|put|patch|delete):\s*$)");
  std::set<std::string> documented;
  std::string line, path;
  bool in_paths = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line == "paths:") {
      in_paths = true;
    } else if (in_paths && !line.empty() && line[0] != ' ' && line[0] != '#') {
      in_paths = false;  // the next top-level key
    } else if (in_paths && std::regex_match(line, m, path_line)) {
      path = m[1].str();
    } else if (in_paths && !path.empty() && std::regex_match(line, m, method_line)) {
      std::string method = m[1].str();
      for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      documented.insert(method + " " + path);
    }
  }
  std::set<std::string> served;
  for (const auto& r : taskledger::serve::Service::Routes()) served.insert(r.method + " " + r.path);
  REQUIRE(served.size() == taskledger::serve::Service::Routes().size());
  for (const std::string& r : served) {
    INFO("route not in docs/openapi.yaml: " << r);
    CHECK(documented.count(r) == 1);
  }
  for (const std::string& r : documented) {
    INFO("documented but not served: " << r);
    CHECK(served.count(r) == 1);
  }
}
