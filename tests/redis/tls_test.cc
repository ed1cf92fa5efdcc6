// The connection layer over TLS (rediss://) against a real redis-server with
// a TLS port and a CA + certificates made at test time: commands, long
// pipelines (many TLS records), function loading, reconnect after the
// server dropped the connection, the command timeout, a server certificate
// from the wrong CA or for another name (refused, with a clear error), a
// server that requires a client certificate, and the URL options.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/redis_server.h"
#include "support/redis_tls.h"
#include "taskledger/redis/client.h"
#include "taskledger/redis/router.h"

using namespace taskledger;
using namespace taskledger::internal;
using namespace taskledger::testing;

namespace {

struct TlsServer {
  TlsFiles files = MakeTlsFiles();
  int tls_port = FreeTlsPort();
  std::unique_ptr<RedisServer> server;
  explicit TlsServer(bool require_client_cert) {
    server = RedisServer::Start(
        {.unix_socket = false, .extra_args = TlsServerArgs(files, tls_port, require_client_cert)});
  }
  std::string Url(const std::string& query) const {
    return "rediss://127.0.0.1:" + std::to_string(tls_port) + (query.empty() ? "" : "?" + query);
  }
};

RedisClient Client(const std::string& url,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
  auto ep = ParseRedisUrl(url);
  REQUIRE(ep.has_value());
  return RedisClient(ep.value(), {.connect_timeout = timeout, .command_timeout = timeout});
}

}  // namespace

TEST_CASE("rediss URL options parse into the endpoint", "[tls]") {
  auto ep = ParseRedisUrl(
      "rediss://u:p%40w@db.example:6380?ca=/a/ca.pem&cert=/c.pem&key=/k%26.pem&sni=redis.internal");
  REQUIRE(ep.has_value());
  CHECK(ep->tls);
  CHECK(ep->host == "db.example");
  CHECK(ep->port == 6380);
  CHECK(ep->password == "p@w");
  CHECK(ep->tls_ca_file == "/a/ca.pem");
  CHECK(ep->tls_cert_file == "/c.pem");
  CHECK(ep->tls_key_file == "/k&.pem");
  CHECK(ep->tls_server_name == "redis.internal");
  CHECK_FALSE(ParseRedisUrl("redis://h:1").value().tls);

  auto bad = ParseRedisUrl("rediss://h:1?cafile=/x");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message().find("unknown TLS option") != std::string::npos);
  CHECK_FALSE(ParseRedisUrl("rediss://h:1?cert=/c.pem").has_value());  // no key
  CHECK_FALSE(ParseRedisUrl("rediss://h:1,h:2").has_value());

  auto seeds = ParseClusterUrl("rediss+cluster://:pw@a:1,b:2?ca=/ca.pem");
  REQUIRE(seeds.has_value());
  REQUIRE(seeds->size() == 2);
  CHECK(seeds->at(1).tls);
  CHECK(seeds->at(1).tls_ca_file == "/ca.pem");
  CHECK(seeds->at(1).password == "pw");
  CHECK_FALSE(ParseClusterUrl("redis+cluster://a:1?ca=/ca.pem").has_value());

  // Durability options come off the URL; TLS options stay for the parser.
  std::string url = "rediss://h:1?ca=/ca.pem&replicas=2&sni=x";
  uint32_t replicas = 0;
  std::chrono::milliseconds wait{0};
  REQUIRE(TakeDurabilityQuery(url, replicas, wait).ok());
  CHECK(replicas == 2);
  CHECK(url == "rediss://h:1?ca=/ca.pem&sni=x");
}

TEST_CASE("commands, pipelines and functions over TLS", "[tls]") {
  TlsServer tls(false);
  RedisClient c = Client(tls.Url("ca=" + tls.files.ca));
  auto set = c.Command({"SET", "tls:k", std::string(100000, 'x')});
  REQUIRE(set.has_value());
  CHECK(set->str() == "OK");
  auto got = c.Command({"GET", "tls:k"});
  REQUIRE(got.has_value());
  CHECK(got->str().size() == 100000);  // spans several TLS records

  // A pipeline bigger than kStreamBytes: queued, streamed, read back in order.
  for (int i = 0; i < 3000; ++i)
    c.Queue({"SET", "tls:p" + std::to_string(i), std::string(50, 'a' + i % 26)});
  c.Queue({"INCR", "tls:counter"});
  auto replies = c.Flush();
  REQUIRE(replies.has_value());
  REQUIRE(replies->size() == 3001);
  CHECK(replies->back().integer() == 1);

  FunctionLibrary lib{
      "tl_tls_test",
      "#!lua name=tl_tls_test\n"
      "redis.register_function('tl_tls_echo', function(keys, args) return args[1] end)\n"};
  auto echoed = c.FCall(lib, "tl_tls_echo", {"tls:f"}, {"hello"});
  REQUIRE(echoed.has_value());
  CHECK(echoed->str() == "hello");

  // The server drops every client: the next call fails (Unavailable), the
  // one after reconnects, over TLS again.
  tls.server->Run({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  auto after_kill = c.Command({"PING"});
  if (!after_kill.has_value()) CHECK(after_kill.error().code() == StatusCode::kUnavailable);
  auto again = c.Command({"GET", "tls:counter"});
  REQUIRE(again.has_value());
  CHECK(again->str() == "1");

  // Through the router (what the stores use), with the system CAs replaced.
  auto router = RedisRouter::Open(tls.Url("ca=" + tls.files.ca), RouterOptions{});
  REQUIRE(router.has_value());
}

TEST_CASE("a frozen TLS server gives Timeout, then the client recovers", "[tls]") {
  TlsServer tls(false);
  RedisClient c = Client(tls.Url("ca=" + tls.files.ca), std::chrono::milliseconds(300));
  REQUIRE(c.Command({"PING"}).has_value());
  tls.server->Freeze();
  auto frozen = c.Command({"PING"});
  tls.server->Thaw();
  REQUIRE_FALSE(frozen.has_value());
  CHECK(frozen.error().code() == StatusCode::kTimeout);
  REQUIRE(c.Command({"PING"}).has_value());
}

TEST_CASE("a server certificate the client cannot verify is refused", "[tls]") {
  TlsServer tls(false);
  SECTION("signed by another CA") {
    RedisClient c = Client(tls.Url("ca=" + tls.files.other_ca));
    auto r = c.Command({"PING"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kFailedPrecondition);
    CHECK(r.error().message().find("server certificate not accepted") != std::string::npos);
    CHECK(r.error().message().find("?ca=FILE") != std::string::npos);
  }
  SECTION("the system CAs do not know the test CA") {
    RedisClient c = Client(tls.Url(""));
    auto r = c.Command({"PING"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kFailedPrecondition);
  }
  SECTION("the certificate names another server") {
    RedisClient c = Client(tls.Url("ca=" + tls.files.ca + "&sni=redis.elsewhere"));
    auto r = c.Command({"PING"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message().find("redis.elsewhere") != std::string::npos);
    RedisClient ok = Client(tls.Url("ca=" + tls.files.ca + "&sni=localhost"));
    CHECK(ok.Command({"PING"}).has_value());
  }
  SECTION("a plain client on the TLS port gets no answer, not a hang") {
    RedisClient c =
        Client("redis://127.0.0.1:" + std::to_string(tls.tls_port), std::chrono::milliseconds(500));
    CHECK_FALSE(c.Command({"PING"}).has_value());
  }
  SECTION("a CA file that does not exist") {
    RedisClient c = Client(tls.Url("ca=" + tls.files.dir + "/missing.pem"));
    auto r = c.Command({"PING"});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == StatusCode::kInvalidArgument);
    CHECK(r.error().message().find("missing.pem") != std::string::npos);
  }
}

TEST_CASE("a server that requires a client certificate", "[tls]") {
  TlsServer tls(true);
  RedisClient without = Client(tls.Url("ca=" + tls.files.ca));
  auto refused = without.Command({"PING"});
  REQUIRE_FALSE(refused.has_value());
  INFO(refused.error().ToString());
  CHECK(refused.error().message().find("client certificate") != std::string::npos);

  RedisClient with = Client(tls.Url("ca=" + tls.files.ca + "&cert=" + tls.files.client_cert +
                                    "&key=" + tls.files.client_key));
  auto pong = with.Command({"PING"});
  REQUIRE(pong.has_value());
  CHECK(pong->str() == "PONG");
}

TEST_CASE("a 3-primary cluster over TLS (tls-cluster yes)", "[tls][cluster]") {
  const TlsFiles files = MakeTlsFiles();
  std::vector<std::unique_ptr<RedisServer>> nodes;
  std::vector<int> tls_ports;
  for (int i = 0; i < 3; ++i) {
    // The cluster bus port is tls-port + 10000: keep it below 65536.
    int port = FreeTlsPort();
    while (port > 55000) port = FreeTlsPort();
    std::vector<std::string> args = TlsServerArgs(files, port, false);
    for (const char* a : {"--cluster-enabled", "yes", "--tls-cluster", "yes", "--tls-replication",
                          "yes", "--cluster-node-timeout", "2000"}) {
      args.emplace_back(a);
    }
    nodes.push_back(RedisServer::Start({.unix_socket = false, .extra_args = args}));
    tls_ports.push_back(port);
  }
  const char* ranges[3][2] = {{"0", "5460"}, {"5461", "10922"}, {"10923", "16383"}};
  for (int i = 0; i < 3; ++i) {
    REQUIRE(nodes[i]->Run({"CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]}) == "OK");
  }
  for (int i = 1; i < 3; ++i) {
    REQUIRE(nodes[0]->Run({"CLUSTER", "MEET", "127.0.0.1", std::to_string(tls_ports[i])}) == "OK");
  }
  bool ok = false;
  for (int tries = 0; tries < 300 && !ok; ++tries) {
    ok = true;
    for (auto& n : nodes) {
      ok = ok && n->Run({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
    }
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(ok);

  const std::string url =
      "rediss+cluster://127.0.0.1:" + std::to_string(tls_ports[0]) + "?ca=" + files.ca;
  auto router = RedisRouter::Open(url, RouterOptions{});
  REQUIRE(router.has_value());
  CHECK((*router)->cluster());
  CHECK((*router)->primaries() == 3);
  // Keys on every primary, each routed to the node serving its slot (the
  // map's addresses are the TLS ports: the router connects to them by TLS).
  for (int i = 0; i < 30; ++i) {
    std::string key = "tls:c" + std::to_string(i);
    auto set = (*router)->Command(key, {"SET", key, std::to_string(i)});
    REQUIRE(set.has_value());
    CHECK(set->str() == "OK");
  }
  int on_nodes = 0;
  for (auto& n : nodes) on_nodes += std::stoi(n->Run({"DBSIZE"}));
  CHECK(on_nodes == 30);
  for (auto& n : nodes) CHECK(std::stoi(n->Run({"DBSIZE"})) > 0);
  auto got = (*router)->Command("tls:c7", {"GET", "tls:c7"});
  REQUIRE(got.has_value());
  CHECK(got->str() == "7");

  // The same cluster named by a plain rediss:// URL of one node is detected.
  auto detected = RedisRouter::Open(
      "rediss://127.0.0.1:" + std::to_string(tls_ports[1]) + "?ca=" + files.ca, RouterOptions{});
  REQUIRE(detected.has_value());
  CHECK((*detected)->cluster());
  // And a wrong CA is refused at open, with the clear TLS error.
  auto wrong = RedisRouter::Open(
      "rediss+cluster://127.0.0.1:" + std::to_string(tls_ports[2]) + "?ca=" + files.other_ca,
      RouterOptions{});
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error().message().find("server certificate not accepted") != std::string::npos);
}
