// The HTTP layer (http/): SSE framing survives any chunking, URLs parse or
// are refused with a reason, and the server and client work against each
// other over loopback: routes, 404/405/413, and a streamed body that reaches
// the client piece by piece while the server is still writing.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "taskledger/http/client.h"
#include "taskledger/http/server.h"
#include "taskledger/http/sse.h"

namespace taskledger::http {
namespace {

std::vector<SseEvent> ParseInChunks(const std::string& wire, size_t chunk) {
  SseParser parser;
  std::vector<SseEvent> events;
  for (size_t i = 0; i < wire.size(); i += chunk) {
    parser.Feed(std::string_view(wire).substr(i, chunk),
                [&events](const SseEvent& e) { events.push_back(e); });
  }
  return events;
}

// A server on a free loopback port, serving on its own thread.
struct LiveServer {
  explicit LiveServer(ServerOptions options = {}) : server(options) {}
  void Start() {
    auto bound = server.Bind("127.0.0.1", 0);
    REQUIRE(bound.has_value());
    port = bound.value();
    thread = std::thread([this] { (void)server.Serve(); });
  }
  ~LiveServer() {
    server.Stop();
    if (thread.joinable()) thread.join();
  }
  std::unique_ptr<Client> Connect() {
    auto client = Client::Open("http://127.0.0.1:" + std::to_string(port));
    REQUIRE(client.has_value());
    return std::move(client).value();
  }
  Server server;
  int port = 0;
  std::thread thread;
};

}  // namespace

TEST_CASE("sse: events survive every chunking, with CRLF, comments and multi-line data",
          "[http][sse]") {
  std::string wire = FormatSseEvent("{\"a\":1}", "7") + ": keep-alive\r\n\r\n" +
                     FormatSseEvent("line one\nline two", "", "note");
  wire += "data: crlf\r\nid: 9\r\n\r\n";
  for (size_t chunk : {1u, 2u, 3u, 7u, 1000u}) {
    auto events = ParseInChunks(wire, chunk);
    REQUIRE(events.size() == 3);
    CHECK(events[0].data == "{\"a\":1}");
    CHECK(events[0].id == "7");
    CHECK(events[0].event == "message");
    CHECK(events[1].data == "line one\nline two");
    CHECK(events[1].event == "note");
    CHECK(events[2].data == "crlf");
    CHECK(events[2].id == "9");
  }
}

TEST_CASE("sse: an event over the size bound is dropped and the stream goes on", "[http][sse]") {
  SseParser parser(64);
  std::vector<SseEvent> events;
  auto keep = [&events](const SseEvent& e) { events.push_back(e); };
  parser.Feed("data: " + std::string(100, 'x') + "\n\n", keep);
  parser.Feed("data: small\n\n", keep);
  REQUIRE(events.size() == 1);
  CHECK(events[0].data == "small");
  CHECK(parser.dropped() == 1);
}

TEST_CASE("http: URLs parse into origin and path, bad ones are refused", "[http][url]") {
  auto u = ParseUrl("https://example.com/mcp");
  REQUIRE(u.has_value());
  CHECK(u->port == 443);
  CHECK(u->path == "/mcp");
  CHECK(u->origin == "https://example.com");
  auto v = ParseUrl("http://127.0.0.1:8931");
  REQUIRE(v.has_value());
  CHECK(v->port == 8931);
  CHECK(v->path == "/");
  auto six = ParseUrl("http://[::1]:9000/a/b");
  REQUIRE(six.has_value());
  CHECK(six->host == "[::1]");
  CHECK(six->port == 9000);
  for (const char* bad : {"ftp://x/", "example.com/mcp", "http://:80/", "http://h:99999/",
                          "http://user:pw@host/", "http://h:x/"}) {
    CHECK_FALSE(ParseUrl(bad).has_value());
  }
}

TEST_CASE("http: routes answer, unknown paths 404, other methods 405, big bodies 413",
          "[http][server]") {
  ServerOptions options;
  options.max_body_bytes = 1024;
  LiveServer live(options);
  live.server.Route("POST", "/echo", [](const Request& req) {
    Response r;
    r.body = req.body;
    r.headers.emplace_back("X-Seen", req.Header("x-token"));
    return r;
  });
  live.Start();
  auto client = live.Connect();

  auto ok = client->Send("POST", "/echo", {{"X-Token", "abc"}}, "{\"x\":1}", "application/json");
  REQUIRE(ok.has_value());
  CHECK(ok->status == 200);
  CHECK(ok->body == "{\"x\":1}");
  CHECK(ok->Header("x-seen") == "abc");

  auto missing = client->Send("POST", "/nope", {}, "{}", "application/json");
  REQUIRE(missing.has_value());
  CHECK(missing->status == 404);

  auto wrong = client->Send("GET", "/echo", {}, "", "");
  REQUIRE(wrong.has_value());
  CHECK(wrong->status == 405);
  CHECK(wrong->Header("Allow") == "POST");

  auto big = client->Send("POST", "/echo", {}, std::string(4096, 'x'), "application/json");
  REQUIRE(big.has_value());
  CHECK(big->status == 413);
}

TEST_CASE("http: a streamed body reaches the client while the server is still writing",
          "[http][server]") {
  std::mutex mu;
  std::condition_variable cv;
  int received = 0;
  LiveServer live;
  live.server.Route("GET", "/events", [&](const Request&) {
    Response r;
    r.content_type = "text/event-stream";
    r.stream = [&](BodyWriter& out) {
      for (int i = 0; i < 3; ++i) {
        if (!out.Write(FormatSseEvent("event " + std::to_string(i)))) return;
        // The next event is written only once the client has the previous
        // one: proof that the body is not buffered to its end.
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return received > i; });
      }
    };
    return r;
  });
  live.Start();
  auto client = live.Connect();
  SseParser parser;
  std::vector<std::string> data;
  auto res = client->Send(
      "GET", "/events", {{"Accept", "text/event-stream"}}, "", "",
      [](const ClientResponse& head) {
        return head.Header("content-type").rfind("text/event-stream", 0) == 0;
      },
      [&](std::string_view chunk) {
        parser.Feed(chunk, [&](const SseEvent& e) {
          data.push_back(e.data);
          std::lock_guard<std::mutex> lock(mu);
          received = static_cast<int>(data.size());
          cv.notify_all();
        });
        return true;
      });
  REQUIRE(res.has_value());
  CHECK(res->status == 200);
  CHECK(data == std::vector<std::string>{"event 0", "event 1", "event 2"});
}

TEST_CASE("http: an unreachable server is Unavailable, not a crash", "[http][client]") {
  int port = 0;
  {
    LiveServer probe;
    probe.Start();
    port = probe.port;
  }  // closed again: nothing listens there now
  auto client = Client::Open("http://127.0.0.1:" + std::to_string(port));
  REQUIRE(client.has_value());
  auto res = (*client)->Send("POST", "/mcp", {}, "{}", "application/json");
  REQUIRE_FALSE(res.has_value());
  INFO(res.error().message());
  CHECK(res.error().code() == StatusCode::kUnavailable);
}

}  // namespace taskledger::http
