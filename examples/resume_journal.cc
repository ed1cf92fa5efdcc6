// A crashed agent loop resumed from its journal (SessionCommandOptions::journal).
//
// Process 1 runs one turn: it asks a scripted model what to do (journaled),
// looks the order up, ships it (a command of the run, with its idempotency
// key), draws a random note id (journaled) and dies before the model's final
// answer. Process 2 opens a session on the same run and runs the same loop
// from its start: the model's two answers and the note id come from the
// journal (the model is not asked again), the shipment returns its recorded
// outcome (the warehouse ships once), and only the final answer is new.
// Process 3 resumes with a different user message: the journal stops it with
// an error naming the step where it diverged.
//
//   example_resume_journal [--store redis://127.0.0.1:6379]
// Exit 0 when all of that happened.
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "taskledger/commands/memory_command_store.h"
#include "taskledger/commands/redis_command_store.h"
#include "taskledger/ledger/memory_store.h"
#include "taskledger/ledger/redis_store.h"
#include "taskledger/session/session.h"

using namespace taskledger;

namespace {

std::shared_ptr<const RulePack> ShopPack() {
  std::vector<PackFile> files = {
      {"pack.json", R"({"name": "shop", "tools": {"read_only": ["get_order"],
                        "writes": ["ship_order"]}, "unknown_tools": "deny"})"},
      {"shop.lua", R"(
rule {
  id = "shop.ship_names_an_order", tools = {"ship_order"},
  check = function(call, ledger)
    if call.args.order_id == nil then return deny("name the order to ship") end
    return allow()
  end,
})"}};
  auto pack = RulePack::FromFiles(std::move(files));
  return pack.has_value() ? pack.value() : nullptr;
}

// The model: decides from the conversation so far (the journaled request).
struct ScriptedModel {
  int asked = 0;
  nlohmann::json Answer(const nlohmann::json& request) {
    ++asked;
    const auto& messages = request["messages"];
    std::string user = messages[0];
    std::string order = user.substr(user.find('#'));
    if (messages.size() == 1) return {{"call", "get_order"}, {"order_id", order}};
    if (messages.size() == 2) return {{"call", "ship_order"}, {"order_id", order}};
    return {{"say",
             "Order " + order + " is on its way (note " + messages[3].get<std::string>() + ")."}};
  }
};

struct Warehouse {
  int shipments = 0;
  Result<ToolOutput> operator()(const ProposedCall& call, const ToolContext& ctx) {
    if (call.tool == "get_order") return ToolOutput{{{"status", "paid"}}, false};
    ++shipments;
    return ToolOutput{{{"shipped", call.arguments["order_id"]}, {"key", ctx.idempotency_key}},
                      false};
  }
};

// One turn of the loop. Returns the model's last words, or the error that stopped it.
Result<std::string> RunTurn(Session& s, ScriptedModel& model, Warehouse& warehouse,
                            const std::string& user, bool die_before_answer) {
  nlohmann::json messages = nlohmann::json::array({user});
  auto ask = [&]() {
    nlohmann::json request = {{"messages", messages}};
    return s.Journaled("model", request,
                       [&]() -> Result<nlohmann::json> { return model.Answer(request); });
  };
  for (int step = 0; step < 2; ++step) {
    auto answer = ask();
    if (!answer) return answer.error();
    ProposedCall call{
        "c" + std::to_string(step), (*answer)["call"], {{"order_id", (*answer)["order_id"]}}};
    CallResult r = s.HandleToolCall(call, ContextToolExecutor(std::ref(warehouse)));
    std::cout << "  " << call.tool << ": " << r.message
              << (r.command && !r.executed ? "  [recorded outcome, not run again]" : "") << "\n";
    messages.push_back(r.message);
  }
  std::random_device device;
  auto note = s.JournaledRandom([&] { return static_cast<uint64_t>(device()); });
  if (!note) return note.error();
  messages.push_back(std::to_string(*note));
  if (die_before_answer) return std::string("(the process died here)");
  auto last = ask();
  if (!last) return last.error();
  if (auto turn = s.EndTurn(); !turn) return turn.error();
  return (*last)["say"].get<std::string>();
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "memory";
  if (argc == 3 && std::strcmp(argv[1], "--store") == 0) url = argv[2];
  std::unique_ptr<Store> store;
  std::unique_ptr<CommandStore> commands;
  if (url == "memory") {
    store = NewMemoryStore();
    commands = NewMemoryCommandStore();
  } else {
    RedisOptions redis;
    redis.url = url;
    auto s = OpenRedisStore(redis);
    auto c = OpenRedisCommandStore(redis);
    if (!s || !c) {
      std::cerr << "cannot open " << url << "\n";
      return 2;
    }
    store = std::move(s).value();
    commands = std::move(c).value();
  }
  auto pack = ShopPack();
  if (!pack) return 2;
  std::random_device device;
  ConversationId id{"demo", "resume-" + std::to_string(device())};
  SessionOptions options;
  options.commands.store = commands.get();
  options.commands.journal = true;  // model answers, clock and random draws are recorded
  ScriptedModel model;
  Warehouse warehouse;

  std::cout << "process 1:\n";
  int replayed = 0;
  {
    auto s = Session::Open(*store, id, pack, options);
    if (!s) return std::cerr << s.error().ToString() << "\n", 1;
    auto said = RunTurn(**s, model, warehouse, "please ship #A1", true);
    std::cout << "  " << (said ? *said : said.error().ToString()) << "\n";
  }
  std::cout << "process 2 (resumed):\n";
  std::string final_words;
  {
    auto s = Session::Open(*store, id, pack, options);
    if (!s) return std::cerr << s.error().ToString() << "\n", 1;
    auto said = RunTurn(**s, model, warehouse, "please ship #A1", false);
    if (!said) return std::cerr << said.error().ToString() << "\n", 1;
    final_words = *said;
    replayed = static_cast<int>((*s)->journal()->replayed_steps());
    std::cout << "  model: " << final_words << "\n";
  }
  std::cout << "process 3 (resumed with another message):\n";
  std::string stopped;
  {
    auto s = Session::Open(*store, id, pack, options);
    if (!s) return std::cerr << s.error().ToString() << "\n", 1;
    auto said = RunTurn(**s, model, warehouse, "please ship #B2", false);
    if (said || said.error().code() != StatusCode::kDivergence) return 1;
    stopped = said.error().message();
    std::cout << "  stopped: " << stopped << "\n";
  }
  bool ok = model.asked == 3 && replayed == 3 && warehouse.shipments == 1 &&
            stopped.find("position 1") != std::string::npos;
  std::cout << "resumed: model asked " << model.asked << " time(s) for 3 answers, " << replayed
            << " step(s) replayed from the journal, order shipped " << warehouse.shipments
            << " time(s), a changed request stopped at " << (ok ? "position 1" : "?") << "\n";
  return ok ? 0 : 1;
}
