// fake_mcp_server: a tiny stdio MCP server for the proxy's unit tests. It
// answers initialize, ping, tools/list and tools/call of a few tools whose
// behaviour a test selects by name:
//   echo    {value}  -> text and structuredContent {"echo": arguments}
//   touch   {path}   -> creates the file (an observable side effect)
//   refuse           -> a result with isError true
//   crash            -> exits with status 3 without answering
//   hang             -> never answers
//   spam             -> writes a garbage line and an oversize line, then answers
// Every line received is appended to $FAKE_MCP_LOG (if set), so a test can
// tell whether a message reached the server. Options: --exit-at-start N exits
// with status N at once; --resources advertises and lists one resource.
// Single-threaded; reads stdin until EOF.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

void Send(const nlohmann::json& j) { std::cout << j.dump() << "\n" << std::flush; }

void Answer(const nlohmann::json& id, nlohmann::json result) {
  Send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

nlohmann::json Text(const std::string& text, bool error = false) {
  return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", text}}})},
          {"isError", error}};
}

}  // namespace

int main(int argc, char** argv) {
  bool resources = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--exit-at-start") == 0 && i + 1 < argc) return std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--resources") == 0) resources = true;
  }
  const char* log_path = std::getenv("FAKE_MCP_LOG");
  std::string line;
  while (std::getline(std::cin, line)) {
    if (log_path) std::ofstream(log_path, std::ios::app) << line << "\n";
    nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
    if (msg.is_discarded() || !msg.is_object() || !msg.contains("method") || !msg.contains("id"))
      continue;
    const nlohmann::json id = msg["id"];
    const std::string method = msg["method"].get<std::string>();
    if (method == "initialize") {
      nlohmann::json caps = {{"tools", nlohmann::json::object()}};
      if (resources) caps["resources"] = nlohmann::json::object();
      Answer(id, {{"protocolVersion", "2025-06-18"},
                  {"capabilities", caps},
                  {"serverInfo", {{"name", "fake"}, {"version", "1.0"}}}});
    } else if (method == "ping") {
      Answer(id, nlohmann::json::object());
    } else if (method == "resources/list" && resources) {
      Answer(id,
             {{"resources", nlohmann::json::array({{{"uri", "file:///fake"}, {"name", "fake"}}})}});
    } else if (method == "tools/list") {
      nlohmann::json tools = nlohmann::json::array();
      for (const char* name : {"echo", "touch", "publish", "refuse", "crash", "hang", "spam"}) {
        tools.push_back({{"name", name}, {"inputSchema", {{"type", "object"}}}});
      }
      Answer(id, {{"tools", tools}});
    } else if (method == "tools/call") {
      const nlohmann::json& params = msg["params"];
      const std::string name = params.value("name", "");
      const nlohmann::json args = params.value("arguments", nlohmann::json::object());
      if (name == "echo") {
        nlohmann::json result = Text(args.dump());
        result["structuredContent"] = {{"echo", args}};
        Answer(id, result);
      } else if (name == "touch" || name == "publish") {  // publish: touch, held for approval
        std::string path = args.value("path", "");
        std::FILE* f = std::fopen(path.c_str(), "w");
        if (f) std::fclose(f);
        Answer(id, Text(f ? "touched " + path : "cannot create " + path, f == nullptr));
      } else if (name == "refuse") {
        Answer(id, Text("refused", true));
      } else if (name == "crash") {
        std::exit(3);
      } else if (name == "hang") {
        continue;
      } else if (name == "spam") {
        std::cout << "this is not json\n" << std::string(4096, 'x') << "\n" << std::flush;
        Answer(id, Text("spammed"));
      } else {
        Send({{"jsonrpc", "2.0"},
              {"id", id},
              {"error", {{"code", -32602}, {"message", "unknown tool"}}}});
      }
    } else {
      Send({{"jsonrpc", "2.0"},
            {"id", id},
            {"error", {{"code", -32601}, {"message", "method not found"}}}});
    }
  }
  return 0;
}
