// GatingProxy's loop: one poll over the client's and the server's pipes, and
// the routing of each message (see taskledger/mcp_proxy/proxy.h for what is intercepted).
#include "taskledger/mcp_proxy/proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <vector>

#include "internal/http_upstream.h"
#include "internal/impl.h"
#include "internal/pipes.h"

namespace taskledger::mcp {
namespace {

using proxy_internal::Line;
using proxy_internal::LineReader;

// Reading stops while this much waits for a slow peer (backpressure).
constexpr size_t kMaxQueuedBytes = 32u << 20;

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const nlohmann::json* Member(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(name);
  return it == j.end() ? nullptr : &*it;
}

}  // namespace

GatingProxy::Impl::Impl(Session& s, ProxyOptions o)
    : session(s),
      options(std::move(o)),
      from_client(options.max_message_bytes),
      from_server(options.max_message_bytes) {
  int fds[2];
  if (proxy_internal::MakePipe(fds)) {
    wake_read = fds[0];
    wake_write = fds[1];
    proxy_internal::SetNonBlocking(wake_read);
    proxy_internal::SetNonBlocking(wake_write);
  }
}

GatingProxy::Impl::~Impl() {
  if (wake_read >= 0) ::close(wake_read);
  if (wake_write >= 0) ::close(wake_write);
}

void GatingProxy::Impl::Log(const std::string& line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::cerr << "taskledger mcp-proxy: " << line << std::endl;
  }
}

void GatingProxy::Impl::SendRawToClient(const std::string& line) {
  if (client_writable) to_client.Push(line);
}

void GatingProxy::Impl::SendToClient(const nlohmann::json& message) {
  SendRawToClient(Dump(message));
}

void GatingProxy::Impl::SendToServer(const std::string& line) {
  if (!server_gone) to_server.Push(line);
}

void GatingProxy::Impl::ReplyError(const nlohmann::json& id, int code, const std::string& message) {
  SendToClient({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void GatingProxy::Impl::FailOutstanding(const std::string& why) {
  for (const auto& [key, pending] : outstanding) ReplyError(pending.id, kInternalError, why);
  outstanding.clear();
  for (const QueuedCall& call : queued_calls) ReplyError(call.request["id"], kInternalError, why);
  queued_calls.clear();
}

void GatingProxy::Impl::DispatchFromClient(const Line& line) {
  ++report.client_messages;
  if (line.oversize) {
    ++report.malformed;
    ReplyError(nullptr, kInvalidRequest,
               "message larger than " + std::to_string(options.max_message_bytes) +
                   " bytes refused by the taskledger MCP proxy");
    return;
  }
  nlohmann::json msg = nlohmann::json::parse(line.text, nullptr, false);
  if (msg.is_discarded()) {
    ++report.malformed;
    ReplyError(nullptr, kParseError, "parse error: the message is not valid JSON");
    return;
  }
  if (msg.is_array()) {
    ++report.malformed;
    ReplyError(nullptr, kInvalidRequest,
               "batch messages are not supported by the taskledger MCP proxy; send one message "
               "per line");
    return;
  }
  const nlohmann::json* method = Member(msg, "method");
  const nlohmann::json* id = Member(msg, "id");
  if (!msg.is_object() || (method && !method->is_string())) {
    ++report.malformed;
    ReplyError(id ? *id : nlohmann::json(nullptr), kInvalidRequest,
               "invalid request: expected a JSON-RPC 2.0 object with a string method");
    return;
  }
  if (!method) {  // a response to a request of the server, or of the proxy's own
    if (eliciting && id && Dump(*id) == eliciting->key) {
      eliciting->response = std::move(msg);
      return;
    }
    SendToServer(line.text);
    return;
  }
  const std::string& name = method->get_ref<const std::string&>();
  if (!id) {  // a notification
    if (name == "notifications/cancelled") {
      const nlohmann::json* params = Member(msg, "params");
      const nlohmann::json* target = params ? Member(*params, "requestId") : nullptr;
      if (target) {
        std::string key = Dump(*target);
        for (auto it = queued_calls.begin(); it != queued_calls.end(); ++it) {
          if (Dump(it->request["id"]) == key) {  // never sent: nothing to tell the server
            queued_calls.erase(it);
            return;
          }
        }
        if (in_flight && in_flight->key == key) in_flight->cancelled = true;
        if (eliciting && eliciting->call_key == key) {  // never sent either
          eliciting->call_cancelled = true;
          return;
        }
        outstanding.erase(key);
      }
    }
    SendToServer(line.text);
    return;
  }
  if (name == "tools/call") {
    queued_calls.push_back(QueuedCall{std::move(msg), line.text});
    return;
  }
  if (AnswerStateRequest(name, msg)) return;
  Amend amend = Amend::kNone;
  if (name == "initialize") {
    amend = Amend::kInitialize;
    const nlohmann::json* params = Member(msg, "params");
    const nlohmann::json* caps = params ? Member(*params, "capabilities") : nullptr;
    const nlohmann::json* elicitation = caps ? Member(*caps, "elicitation") : nullptr;
    client_elicits = elicitation && elicitation->is_object();
  }
  if (name == "resources/list" || name == "prompts/list") {
    bool served = name == "resources/list" ? server_has_resources : server_has_prompts;
    Amend kind = name == "resources/list" ? Amend::kResourcesList : Amend::kPromptsList;
    if (!served) {  // the server has none: the proxy's own list is the whole answer
      nlohmann::json empty = {
          {"jsonrpc", "2.0"}, {"id", *id}, {"result", nlohmann::json::object()}};
      SendToClient(AmendResponse(kind, std::move(empty)));
      return;
    }
    const nlohmann::json* params = Member(msg, "params");
    if (!params || !Member(*params, "cursor")) amend = kind;  // the first page only
  }
  if (server_gone) {
    ReplyError(*id, kInternalError, "the MCP server is not running");
    return;
  }
  outstanding[Dump(*id)] = Outstanding{*id, amend};
  SendToServer(line.text);
}

void GatingProxy::Impl::DispatchFromServer(const Line& line) {
  ++report.server_messages;
  if (line.oversize) {
    ++report.malformed;
    Log("dropped a message from the server larger than " +
        std::to_string(options.max_message_bytes) + " bytes");
    return;
  }
  nlohmann::json msg = nlohmann::json::parse(line.text, nullptr, false);
  if (msg.is_discarded() || !msg.is_object()) {
    ++report.malformed;
    Log("dropped a malformed message from the server: " + line.text.substr(0, 200));
    return;
  }
  const nlohmann::json* id = Member(msg, "id");
  bool is_response =
      id && !Member(msg, "method") && (Member(msg, "result") || Member(msg, "error"));
  if (!is_response) {  // the server's own requests and notifications pass through
    SendRawToClient(line.text);
    return;
  }
  std::string key = Dump(*id);
  if (in_flight && in_flight->key == key && !in_flight->response) {
    in_flight->response = std::move(msg);
    in_flight->response_line = line.text;
    return;
  }
  if (abandoned.erase(key) > 0) return;  // its caller was already answered
  auto it = outstanding.find(key);
  if (it == outstanding.end() || it->second.amend == Amend::kNone) {
    if (it != outstanding.end()) outstanding.erase(it);
    SendRawToClient(line.text);
    return;
  }
  Amend amend = it->second.amend;
  outstanding.erase(it);
  SendToClient(AmendResponse(amend, std::move(msg)));
}

void GatingProxy::Impl::Pump(int timeout_ms) {
  std::vector<pollfd> fds;
  auto add = [&fds](int fd, short events) -> int {
    if (fd < 0 || events == 0) return -1;
    fds.push_back(pollfd{fd, events, 0});
    return static_cast<int>(fds.size()) - 1;
  };
  const bool server_io = !server_gone && server;
  int wake_i = add(wake_read, POLLIN);
  int cin_i =
      client_reading && to_server.pending_bytes() < kMaxQueuedBytes ? add(client_in, POLLIN) : -1;
  int cout_i = client_writable && to_client.pending_bytes() > 0 ? add(client_out, POLLOUT) : -1;
  int sout_i = server_io && to_client.pending_bytes() < kMaxQueuedBytes
                   ? add(server->stdout_fd(), POLLIN)
                   : -1;
  int sin_i = server_io && to_server.pending_bytes() > 0 ? add(server->stdin_fd(), POLLOUT) : -1;
  int ready = ::poll(fds.data(), fds.size(), timeout_ms);
  if (ready < 0 && errno != EINTR) {
    Log(std::string("poll failed: ") + std::strerror(errno));
    stop_requested = true;
    return;
  }
  auto fired = [&fds, ready](int i) { return ready > 0 && i >= 0 && fds[i].revents != 0; };
  if (fired(wake_i)) {
    char drain[64];
    while (::read(wake_read, drain, sizeof drain) > 0) {
    }
  }
  if (fired(sout_i)) {
    std::vector<Line> lines;
    LineReader::State st = from_server.ReadFrom(server->stdout_fd(), lines);
    for (const Line& l : lines) DispatchFromServer(l);
    if (st != LineReader::State::kOpen) server_gone = true;
  }
  if (fired(cin_i)) {
    std::vector<Line> lines;
    LineReader::State st = from_client.ReadFrom(client_in, lines);
    for (const Line& l : lines) DispatchFromClient(l);
    if (st != LineReader::State::kOpen) client_reading = false;
  }
  if (fired(sin_i) && !server_gone && !to_server.FlushTo(server->stdin_fd())) server_gone = true;
  if (fired(cout_i) && !to_client.FlushTo(client_out)) client_writable = false;
  // A server whose stdout stays open (held by a grandchild) but which exited
  // is gone all the same.
  if (!server_gone && server && server->Exited()) {
    std::vector<Line> lines;
    from_server.ReadFrom(server->stdout_fd(), lines);
    for (const Line& l : lines) DispatchFromServer(l);
    server_gone = true;
  }
}

Result<ProxyReport> GatingProxy::Impl::Run(int in, int out) {
  if (options.server_command.empty() && options.upstream_url.empty()) {
    return Status::InvalidArgument("no MCP server command or URL given");
  }
  if (session.run() == nullptr) {
    return Status::InvalidArgument(
        "the proxy's session must write through a command ledger (SessionOptions::commands)");
  }
  ::signal(SIGPIPE, SIG_IGN);
  if (!options.upstream_url.empty()) {
    auto started = proxy_internal::HttpUpstream::Start(
        options.upstream_url, options.upstream_headers, options.max_message_bytes,
        [this](const std::string& line) { Log(line); });
    if (!started) return started.error();
    server = std::move(started).value();
  } else {
    auto started = proxy_internal::ServerProcess::Start(options.server_command);
    if (!started) return started.error();
    server = std::move(started).value();
  }
  client_in = in;
  client_out = out;
  int in_flags = proxy_internal::SetNonBlocking(client_in);
  int out_flags = proxy_internal::SetNonBlocking(client_out);

  while (true) {
    if (stop_requested) {
      report.end = ProxyReport::End::kClientClosed;
      report.detail = "stopped";
      FailOutstanding("the taskledger MCP proxy was stopped");
      break;
    }
    if (server_gone) {
      server->Stop(options.shutdown_grace_ms);
      report.end = ProxyReport::End::kServerExited;
      report.detail = "the MCP server " + server->Describe();
      FailOutstanding(report.detail + " before answering");
      break;
    }
    if (!client_reading && !client_eof_at) client_eof_at = std::chrono::steady_clock::now();
    // After the client's EOF, requests it already sent still get their
    // answers, for at most the grace period.
    bool draining = client_eof_at && !server_gone && !outstanding.empty() &&
                    std::chrono::steady_clock::now() - *client_eof_at <
                        std::chrono::milliseconds(options.shutdown_grace_ms);
    if (!client_writable || (!client_reading && queued_calls.empty() && !draining)) {
      report.end = ProxyReport::End::kClientClosed;
      report.detail = "the client closed the connection";
      FailOutstanding(
          "the taskledger MCP proxy is shutting down: the client closed the connection");
      break;
    }
    if (!queued_calls.empty()) {
      QueuedCall call = std::move(queued_calls.front());
      queued_calls.pop_front();
      HandleToolsCall(call);
      continue;
    }
    Pump(draining ? 50 : 1000);
  }

  // Let the client have what is queued for it (bounded), then stop the server.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.shutdown_grace_ms);
  while (client_writable && to_client.pending_bytes() > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p{client_out, POLLOUT, 0};
    if (::poll(&p, 1, 50) > 0 && !to_client.FlushTo(client_out)) client_writable = false;
  }
  // Messages forwarded last (e.g. a final notification) get their chance.
  if (!server_gone) to_server.FlushTo(server->stdin_fd());
  server->Stop(options.shutdown_grace_ms);
  report.server_wait_status = server->wait_status();
  if (in_flags >= 0) ::fcntl(client_in, F_SETFL, in_flags);
  if (out_flags >= 0) ::fcntl(client_out, F_SETFL, out_flags);
  return report;
}

SessionCommandOptions McpCommandOptions(CommandStore& store, RunId run, std::string worker_id,
                                        std::function<LookupResult(const Command&)> lookup) {
  SessionCommandOptions commands;
  commands.store = &store;
  commands.run = std::move(run);
  commands.worker_id = std::move(worker_id);
  commands.lookup = lookup ? std::move(lookup) : [](const Command&) {
    return LookupResult::Unknown("an MCP server offers no lookup of past calls");
  };
  // One step per JSON-RPC request: the call id is the request id.
  commands.step_of = [](const ProposedCall& call) { return "call-" + call.id; };
  return commands;
}

GatingProxy::GatingProxy(Session& session, ProxyOptions options)
    : impl_(std::make_unique<Impl>(session, std::move(options))) {}

GatingProxy::~GatingProxy() = default;

Result<ProxyReport> GatingProxy::Run(int client_in, int client_out) {
  try {
    return impl_->Run(client_in, client_out);
  } catch (const std::exception& e) {
    if (impl_->server) impl_->server->Stop(impl_->options.shutdown_grace_ms);
    return Status::Internal(std::string("MCP proxy failed: ") + e.what());
  }
}

void GatingProxy::RequestStop() {
  impl_->stop_requested = true;
  if (impl_->wake_write >= 0) {
    char c = 1;
    ssize_t ignored = ::write(impl_->wake_write, &c, 1);
    (void)ignored;
  }
}

}  // namespace taskledger::mcp
