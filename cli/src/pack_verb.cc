// `taskledger pack new NAME --tools tools.json [--dir DIR]` scaffolds a rule
// pack from tool schemas (pack/scaffold.h); `taskledger pack lint DIR` checks
// a pack for gaps a reviewer would look for (pack/lint.h). Exit codes: new 0
// written, 2 bad input or an existing directory; lint 0 clean, 1 findings, 2
// a pack that does not load.
#include <iostream>
#include <memory>
#include <string>

#include "cli_common.h"
#include "taskledger/pack/lint.h"
#include "taskledger/pack/rule_pack.h"
#include "taskledger/pack/scaffold.h"
#include "taskledger/render/visibility.h"
#include "verbs.h"

namespace taskledger::cli {

namespace {

struct PackNewOptions {
  std::string name;
  std::string tools;
  std::string dir;
};

struct PackLintOptions {
  std::string dir;
  bool json = false;
};

int RunPackNew(const PackNewOptions& o) {
  auto schemas = ReadJsonFile(o.tools);
  if (!schemas) return ReportError("cannot read tool schemas " + o.tools, schemas.error());
  auto tools = ParseToolSchemas(*schemas);
  if (!tools) return ReportError(o.tools, tools.error());
  auto files = ScaffoldPack(o.name, *tools);
  if (!files) return ReportError("pack new", files.error());
  const std::string dir = o.dir.empty() ? o.name : o.dir;
  if (Status s = WritePackFiles(dir, *files); !s.ok()) return ReportError("pack new", s);
  size_t writes = 0;
  for (const ScaffoldTool& t : *tools) writes += t.writes ? 1 : 0;
  std::cout << "wrote " << dir << ": " << tools->size() << " tools (" << tools->size() - writes
            << " read-only, " << writes << " write), " << writes << " example rules\n"
            << "next: review the tool lists in " << dir << "/pack.json, replace the example "
            << "rules in " << dir << "/policy.lua, then run `taskledger policy test " << dir
            << "` and `taskledger pack lint " << dir << "`\n";
  return kExitOk;
}

int RunPackLint(const PackLintOptions& o) {
  auto pack = RulePack::Load(o.dir);
  if (!pack) return ReportError("cannot load rule pack " + o.dir, pack.error());
  std::vector<LintFinding> findings = LintPack(**pack);
  // pack.json "render" is read by the renderer, which the pack library does
  // not know: checked here.
  if (auto render = (*pack)->manifest().find("render"); render != (*pack)->manifest().end()) {
    if (auto v = RenderVisibility::FromJson(*render); !v) {
      findings.push_back({"invalid_render_section", "render", v.error().message()});
    }
  }
  if (o.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const LintFinding& f : findings) {
      list.push_back({{"check", f.check}, {"subject", f.subject}, {"message", f.message}});
    }
    PrintJson({{"pack", (*pack)->name()}, {"findings", list}});
  } else {
    for (const LintFinding& f : findings) {
      std::cout << f.check << ": " << f.message << "\n";
    }
    std::cout << (*pack)->name() << ": " << findings.size()
              << (findings.size() == 1 ? " finding" : " findings") << "\n";
  }
  return findings.empty() ? kExitOk : kExitCheckFailed;
}

}  // namespace

void AddPackVerb(CLI::App& app, int& exit_code) {
  CLI::App* verb = app.add_subcommand("pack", "Create and check rule packs");
  verb->require_subcommand(1);

  auto new_options = std::make_shared<PackNewOptions>();
  CLI::App* create = verb->add_subcommand(
      "new", "Scaffold a rule pack from tool schemas (OpenAI function-calling JSON)");
  create->add_option("name", new_options->name, "Pack name ([A-Za-z0-9_-]+)")->required();
  create->add_option("--tools", new_options->tools, "Tool schemas (a JSON array)")->required();
  create->add_option("--dir", new_options->dir, "Folder to create (default: ./NAME)");
  create->callback([new_options, &exit_code] { exit_code = RunPackNew(*new_options); });

  auto lint_options = std::make_shared<PackLintOptions>();
  CLI::App* lint = verb->add_subcommand("lint", "Check a rule pack for gaps in its rules");
  lint->add_option("dir", lint_options->dir, "Rule pack folder")->required();
  lint->add_flag("--json", lint_options->json, "Print machine-readable JSON");
  lint->callback([lint_options, &exit_code] { exit_code = RunPackLint(*lint_options); });
}

}  // namespace taskledger::cli
