// `taskledger render CONV`: a conversation's state block at a version, as an
// agent's prompt would carry it, in a chosen format; with --rules, what the
// pack's pack.json "render" keeps out of the prompt is left out or redacted.
// Exit 0 ok, 2 bad usage, unknown conversation or version, a budget too
// small, an unloadable pack or render section, or a store error.
#include <iostream>
#include <optional>
#include <string>

#include "cli_common.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/render/state_block.h"
#include "verbs.h"

namespace taskledger::cli {
namespace {

struct RenderOptions {
  CommonOptions common;
  std::string conversation;
  std::optional<uint64_t> version;
  std::string format = "plain";
  bool provenance = false;
  size_t max_chars = 0;
  std::string rules;  // pack folder whose pack.json "render" applies
};

int RunRender(const RenderOptions& o) {
  std::optional<RenderVisibility> visibility;
  if (!o.rules.empty()) {
    auto pack = RulePack::Load(o.rules);
    if (!pack) return ReportError("cannot load rule pack " + o.rules, pack.error());
    auto section = (*pack)->manifest().find("render");
    auto parsed = RenderVisibility::FromJson(section == (*pack)->manifest().end() ? nlohmann::json()
                                                                                  : *section);
    if (!parsed) return ReportError(o.rules + "/pack.json", parsed.error());
    visibility = std::move(*parsed);
  }
  NoteIfEphemeralStore(o.common);
  auto store = OpenStoreOrReport(o.common);
  if (!store) return kExitUsage;
  const ConversationId id{o.common.tenant, o.conversation};
  auto head = store->Head(id);
  if (!head) return ReportError("cannot read " + o.conversation, head.error());
  if (*head == 0) return ReportError(o.conversation, Status::NotFound("no such conversation"));
  const uint64_t v = o.version.value_or(*head);
  auto state = store->ReadVersion(id, v);
  if (!state) return ReportError(o.conversation + " version " + std::to_string(v), state.error());
  // Wall-clock expiry is judged as of the commit of that version, so an old
  // version renders as the agent saw it then.
  int64_t at = 0;
  if (v > 0) {
    auto turns = store->ReadTurns(id, v, v);
    if (!turns) return ReportError("cannot read turn " + std::to_string(v), turns.error());
    at = turns->front().committed_at_ms;
  }
  StateBlockOptions options;
  options.format = o.format == "markdown" ? StateBlockFormat::kMarkdown
                   : o.format == "xml"    ? StateBlockFormat::kXml
                   : o.format == "json"   ? StateBlockFormat::kJson
                                          : StateBlockFormat::kPlain;
  options.include_provenance = o.provenance;
  options.max_chars = o.max_chars;
  if (visibility) options.visibility = &*visibility;
  auto block = RenderStateBlock(*state, at, options);
  if (!block) return ReportError("cannot render", block.error());
  if (o.common.json) {
    PrintJson({{"conversation", o.conversation},
               {"version", v},
               {"format", o.format},
               {"text", block->text},
               {"chars", block->chars},
               {"approx_tokens", block->approx_tokens},
               {"omitted", block->total_omitted()},
               {"hidden", block->hidden},
               {"redacted", block->redacted}});
  } else {
    std::cout << block->text << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddRenderVerb(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RenderOptions>();
  CLI::App* verb = app.add_subcommand("render", "Render a conversation's state block at a version");
  verb->add_option("conversation", o->conversation, "Conversation id")->required();
  verb->add_option("--version", o->version, "Version (default: the head)");
  verb->add_option("--format", o->format, "plain, markdown, xml or json")
      ->check(CLI::IsMember({"plain", "markdown", "xml", "json"}))
      ->capture_default_str();
  verb->add_flag("--provenance", o->provenance, "Show each entry's turn, source and rule");
  verb->add_option("--max-chars", o->max_chars, "Character budget (0: none)");
  verb->add_option("--rules", o->rules,
                   "Rule pack folder: leave out what its pack.json \"render\" marks internal "
                   "and redact what it marks");
  AddCommonOptions(*verb, o->common);
  verb->callback([o, &exit_code] { exit_code = RunRender(*o); });
}

}  // namespace taskledger::cli
