// WriteAuditHtml (see audit_html.h). Conversations are loaded and written one
// at a time, so a page for a whole replayed corpus needs one conversation in
// memory, not the corpus.
#include "audit_html.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "audit_history.h"
#include "audit_visibility.h"
#include "taskledger/ledger/codec.h"
#include "taskledger/ledger/extraction_error.h"
#include "taskledger/render/state_block.h"

namespace taskledger::cli {
namespace {

constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:1.5rem;background:#f6f7f9;color:#1d2330}
h1{margin-top:0}h2{margin:.2rem 0 .8rem}h3{margin:.2rem 0;font-size:1rem}
.summary{color:#555}
table.index td:nth-child(n+2),table.rules td:nth-child(n+2){text-align:right}
tr.has-block td:last-child{color:#b42318;font-weight:600}
.filter:checked~main section.conversation:not(.has-block),.filter:checked~main tr.conversation-row:not(.has-block){display:none}
.no-match{display:none}
#search{margin-left:1rem;padding:.2rem .4rem}
section.conversation{background:#fff;border:1px solid #d9dce3;border-radius:8px;padding:1rem 1.2rem;margin:1.2rem 0}
ol.timeline{list-style:none;padding-left:0;border-left:3px solid #c9cfdb;margin-left:.4rem}
li.turn{position:relative;margin:0 0 1rem 0;padding:.4rem 0 .4rem 1.2rem}
li.turn::before{content:"";position:absolute;left:-.55rem;top:.7rem;width:.8rem;height:.8rem;border-radius:50%;background:#8a94a8}
li.turn.has-block::before{background:#c62828}
.meta{color:#6b7385;font-size:.85rem}
.decision{border-radius:6px;padding:.4rem .6rem;margin:.35rem 0;border:1px solid}
.decision.allow{background:#eef8f0;border-color:#9fd3a9}
.decision.deny{background:#fdecec;border-color:#e08a8a}
.decision.confirm,.decision.require_approval{background:#fff6e0;border-color:#e6c06a}
.decision .outcome{font-weight:700;text-transform:uppercase;font-size:.8rem;margin-right:.4rem}
.decision .rule{font-family:ui-monospace,monospace;font-size:.85rem}
.decision .reason{margin:.2rem 0 0}
.decision details{font-size:.85rem}
table{border-collapse:collapse;margin:.3rem 0;font-size:.85rem}
td,th{border:1px solid #dde1e8;padding:.2rem .45rem;text-align:left;vertical-align:top}
th{background:#f0f2f6}
tr.added td.change{color:#1b7a30}tr.removed td.change{color:#b42318}tr.changed td.change{color:#8a5a00}
td code{word-break:break-all}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.82rem}
pre{background:#f3f4f7;padding:.6rem;border-radius:6px;white-space:pre-wrap;word-break:break-word}
.errors{color:#8a1c1c}
tr.call.denied td:last-child,tr.call.error td:last-child{color:#b42318}
tr.call.uncertain td:last-child,tr.call.escalated td:last-child{color:#8a5a00;font-weight:700}
tr.call.awaiting_approval td:last-child,tr.call.deduplicated td:last-child{color:#3b5bdb}
table.evidence tr.deciding td{background:#fff3f3}
td.absent{color:#6b7385;font-style:italic}
)css";

// "2026-11-22 01:18:03.873 UTC"
std::string UtcTime(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  if (gmtime_r(&secs, &tm) == nullptr) return std::to_string(ms) + " ms";
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%03d UTC", buf, static_cast<int>(ms % 1000));
  return out;
}

std::string Json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Str(const nlohmann::json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : Json(*it);
}

// The chain under a decision: per rule (the deciding one first), each entry
// it read with the value the decision saw, verified or claimed, and the call
// (a link to its turn) whose output wrote it.
void WriteEvidence(std::ostream& out, const nlohmann::json& evidence, size_t conv_index) {
  size_t reads = 0;
  for (const auto& e : evidence) reads += e["reads"].size();
  out << "<details class=\"evidence\"" << (reads > 0 ? " open" : "")
      << "><summary>Evidence: " << reads << " ledger entr" << (reads == 1 ? "y" : "ies")
      << " read</summary><table class=\"evidence\"><tr><th>rule</th><th>entry</th><th>value</th>"
         "<th>evidence</th><th>came from</th></tr>";
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& e : evidence) {
      const bool deciding = e["deciding"].get<bool>();
      if (deciding != (pass == 0)) continue;
      for (const auto& r : e["reads"]) {
        out << "<tr class=\"read" << (deciding ? " deciding" : "") << "\" data-rule=\""
            << HtmlEscape(Str(e, "rule")) << "\"><td><code>" << HtmlEscape(Str(e, "rule"))
            << "</code></td><td><code>" << HtmlEscape(Str(r, "category") + "." + Str(r, "key"))
            << "</code></td>";
        if (!r.value("present", false)) {
          out << "<td class=\"absent\">absent</td><td></td><td></td></tr>";
          continue;
        }
        out << "<td><code>" << HtmlEscape(r.contains("value") ? Json(r["value"]) : "")
            << "</code></td><td>" << (r.value("verified", false) ? "verified" : "claimed")
            << ", version " << HtmlEscape(Str(r, "turn"));
        if (r.contains("value_matches") && !r["value_matches"].get<bool>()) {
          out << " <span class=\"errors\">(value does not match the digest read)</span>";
        }
        out << "</td><td>";
        if (r.contains("call") && r["call"].is_object()) {
          const nlohmann::json& c = r["call"];
          out << "<a href=\"#turn-" << conv_index << "-" << HtmlEscape(Str(c, "turn")) << "\">call "
              << HtmlEscape(Str(c, "id")) << " <code>" << HtmlEscape(Str(c, "tool"))
              << "</code></a> <code>" << HtmlEscape(Json(c["arguments"])) << "</code> &rarr; "
              << HtmlEscape(Str(c, "outcome"));
        } else {
          out << HtmlEscape(Str(r, "source_id").empty() ? Str(r, "source") : Str(r, "source_id"));
        }
        if (!Str(r, "rule").empty()) {
          out << " <span class=\"meta\">(extraction rule " << HtmlEscape(Str(r, "rule"))
              << ")</span>";
        }
        out << "</td></tr>";
      }
    }
  }
  out << "</table></details>";
}

void WriteDecision(std::ostream& out, const AuditHistory& h, const DecisionRecord& rec,
                   const std::string& id, size_t conv_index) {
  const nlohmann::json d = EncodeDecision(rec);
  const std::string outcome = rec.decision;
  const bool blocked = outcome != "allow";
  out << "<div class=\"decision " << HtmlEscape(outcome) << (blocked ? " blocked" : "")
      << "\" id=\"" << id << "\" data-rule=\"" << HtmlEscape(rec.rule) << "\" data-version-seen=\""
      << rec.version_seen << "\">"
      << "<span class=\"outcome\">" << HtmlEscape(outcome) << "</span>"
      << "<code class=\"tool\">" << HtmlEscape(rec.tool) << "</code> "
      << "<span class=\"meta\">call " << HtmlEscape(rec.call_id) << ", decided on version "
      << rec.version_seen << " (+" << rec.staged_seen << " staged), " << rec.latency_us
      << " µs</span>";
  if (blocked && !rec.rule.empty()) {
    out << " <span class=\"rule\">" << HtmlEscape(rec.rule) << "</span>";
  } else if (!blocked && !rec.rules.empty()) {
    out << " <span class=\"meta\">all " << rec.rules.size() << " applicable rules passed</span>";
  }
  if (!rec.reason.empty()) out << "<p class=\"reason\">" << HtmlEscape(rec.reason) << "</p>";
  if (!rec.rules.empty()) {
    out << "<details><summary>" << rec.rules.size() << " rules evaluated</summary><table>"
        << "<tr><th>rule</th><th>outcome</th><th>reason</th></tr>";
    for (const RuleResult& r : rec.rules) {
      out << "<tr><td><code>" << HtmlEscape(r.id) << "</code></td><td>" << HtmlEscape(r.outcome)
          << "</td><td>" << HtmlEscape(r.reason) << "</td></tr>";
    }
    out << "</table></details>";
    WriteEvidence(out, DecisionEvidence(h, rec, nullptr), conv_index);
  }
  const LedgerState seen = SeenState(h, rec);
  StateBlockOptions options;
  options.format = StateBlockFormat::kPlain;
  options.include_provenance = true;
  const uint64_t turn = std::min<uint64_t>(rec.turn, h.turns.size());
  auto block =
      RenderStateBlock(seen, turn == 0 ? 0 : h.turns[turn - 1].record.committed_at_ms, options);
  out << "<details class=\"state-seen\"><summary>Ledger state at this decision (version "
      << rec.version_seen << " + " << rec.staged_seen << " staged)</summary><pre>"
      << HtmlEscape(block ? block->text : block.error().ToString()) << "</pre></details>";
  out << "</div>\n";
}

void WriteTurn(std::ostream& out, const AuditHistory& h, const AuditTurn& t, size_t conv_index) {
  const TurnRecord& r = t.record;
  bool has_block = false;
  for (const DecisionRecord& d : r.decisions) has_block = has_block || d.decision != "allow";
  const std::string turn_id = "turn-" + std::to_string(conv_index) + "-" + std::to_string(r.turn);
  out << "<li class=\"turn" << (has_block ? " has-block" : "") << "\" id=\"" << turn_id
      << "\" data-version=\"" << r.turn << "\"><h3>Turn " << r.turn
      << " <span class=\"meta\">committed " << UtcTime(r.committed_at_ms) << "</span></h3>\n";
  for (size_t k = 0; k < r.decisions.size(); ++k) {
    WriteDecision(out, h, r.decisions[k], turn_id + "-decision-" + std::to_string(k), conv_index);
  }
  if (!r.calls.empty()) {
    out << "<table "
           "class=\"calls\"><tr><th>call</th><th>tool</th><th>arguments</th><th>outcome</th></tr>";
    for (const CallRecord& c : r.calls) {
      out << "<tr class=\"call " << HtmlEscape(c.outcome) << "\"><td>" << HtmlEscape(c.call.id)
          << "</td><td><code>" << HtmlEscape(c.call.tool) << "</code></td><td><code>"
          << HtmlEscape(Json(c.call.arguments)) << "</code></td><td>"
          << HtmlEscape(OutcomeMeaning(c.outcome)) << "</td></tr>";
    }
    out << "</table>\n";
  }
  nlohmann::json diff = EncodeAuditDiff(t.diff);
  if (!diff.empty()) {
    out << "<table class=\"diff\"><tr><th>change</th><th>entry</th><th>before</th><th>after</th>"
           "<th>source</th></tr>";
    for (const auto& c : diff) {
      const std::string change = Str(c, "change");
      out << "<tr class=\"" << change << "\"><td class=\"change\">" << change << "</td><td><code>"
          << HtmlEscape(Str(c, "category") + "." + Str(c, "key")) << "</code></td><td><code>"
          << HtmlEscape(c.contains("before") ? Json(c["before"]) : "") << "</code></td><td><code>"
          << HtmlEscape(c.contains("after") ? Json(c["after"]) : "") << "</code></td><td>"
          << HtmlEscape(Str(c, "source"));
      if (c.contains("verified")) out << (c["verified"].get<bool>() ? " (verified)" : " (claimed)");
      out << "</td></tr>";
    }
    out << "</table>\n";
  }
  if (!r.errors.empty()) {
    out << "<ul class=\"errors\">";
    for (const ExtractionError& e : r.errors) {
      out << "<li>" << HtmlEscape(Json(EncodeExtractionError(e))) << "</li>";
    }
    out << "</ul>\n";
  }
  out << "</li>\n";
}

// What the index shows per conversation, and the per-rule table.
struct ConversationCounts {
  size_t turns = 0, calls = 0, decisions = 0, held = 0;
};
struct RuleCounts {
  size_t evaluated = 0, held = 0, decided = 0;
};

void Count(const AuditHistory& h, ConversationCounts& c, std::map<std::string, RuleCounts>& rules) {
  c.turns = h.turns.size();
  for (const AuditTurn& t : h.turns) {
    c.calls += t.record.calls.size();
    for (const DecisionRecord& d : t.record.decisions) {
      ++c.decisions;
      if (d.decision != "allow") {
        ++c.held;
        if (!d.rule.empty()) ++rules[d.rule].decided;
      }
      for (const RuleResult& r : d.rules) {
        RuleCounts& rc = rules[r.id];
        ++rc.evaluated;
        if (r.outcome != "allow") ++rc.held;
      }
    }
  }
}

// A search box (hides conversations whose text does not contain the query)
// and nothing else: the page stays one file with no external resources, and
// everything but the search works without scripts.
constexpr const char* kSearchScript = R"js(<script>
(function(){var q=document.getElementById("search");if(!q)return;
q.hidden=false;q.addEventListener("input",function(){var t=q.value.toLowerCase();
document.querySelectorAll("section.conversation").forEach(function(s){
s.classList.toggle("no-match",t!==""&&s.textContent.toLowerCase().indexOf(t)<0);});
document.querySelectorAll("tr.conversation-row").forEach(function(r){
var s=document.getElementById(r.dataset.target);
r.classList.toggle("no-match",s!==null&&s.classList.contains("no-match"));});});})();
</script>)js";

void WriteHead(std::ostream& out, const std::vector<ConversationId>& conversations,
               const std::vector<ConversationCounts>& counts,
               const std::map<std::string, RuleCounts>& rules) {
  size_t calls = 0, held = 0, with_block = 0;
  for (const ConversationCounts& c : counts) {
    calls += c.calls;
    held += c.held;
    with_block += c.held > 0 ? 1 : 0;
  }
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>taskledger audit</title><style>"
      << kStyle << "</style></head><body>\n<h1>taskledger audit</h1>\n";
  out << "<p class=\"summary\">" << conversations.size() << " conversation"
      << (conversations.size() == 1 ? "" : "s") << ", " << calls << " calls, " << held
      << " held back (denied, or waiting for a confirmation or an approval) in " << with_block
      << " conversation" << (with_block == 1 ? "" : "s")
      << ". Decisions that blocked a call are red.</p>\n";
  // The filter is a checkbox styled by CSS (works without scripts); the
  // elements it filters must be its later siblings.
  out << "<input type=\"checkbox\" id=\"held-only\" class=\"filter\">"
         "<label for=\"held-only\">only conversations with a call held back</label> "
         "<input type=\"search\" id=\"search\" placeholder=\"search conversations\" hidden>\n";
  out << "<main>\n";
  if (!rules.empty()) {
    out << "<details class=\"rules\" open><summary>Rules</summary><table class=\"rules\">"
           "<tr><th>rule</th><th>evaluated</th><th>held back</th><th>decided</th></tr>";
    for (const auto& [rule, r] : rules) {
      out << "<tr data-rule=\"" << HtmlEscape(rule) << "\"><td><code>" << HtmlEscape(rule)
          << "</code></td><td>" << r.evaluated << "</td><td>" << r.held << "</td><td>" << r.decided
          << "</td></tr>";
    }
    out << "</table></details>\n";
  }
  if (conversations.size() > 1) {
    out << "<table class=\"index\"><tr><th>conversation</th><th>turns</th><th>calls</th>"
           "<th>decisions</th><th>held back</th></tr>";
    for (size_t i = 0; i < conversations.size(); ++i) {
      const ConversationCounts& c = counts[i];
      out << "<tr class=\"conversation-row" << (c.held > 0 ? " has-block" : "")
          << "\" data-target=\"conversation-" << i << "\"><td><a href=\"#conversation-" << i
          << "\">" << HtmlEscape(conversations[i].conversation) << "</a></td><td>" << c.turns
          << "</td><td>" << c.calls << "</td><td>" << c.decisions << "</td><td>" << c.held
          << "</td></tr>";
    }
    out << "</table>\n";
  }
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Status WriteAuditHtml(Store& store, const std::vector<ConversationId>& conversations,
                      const std::string& path, const RenderVisibility* visibility) {
  // The index (counts per conversation, the per-rule table) comes first on
  // the page but is known only once every conversation was read: the
  // sections go to a temporary file next to the page, then both are joined.
  const std::string body_path = path + ".body.tmp";
  std::ofstream body(body_path, std::ios::binary | std::ios::trunc);
  if (!body) return Status::InvalidArgument("cannot write " + body_path);
  std::vector<ConversationCounts> counts(conversations.size());
  std::map<std::string, RuleCounts> rules;
  for (size_t i = 0; i < conversations.size(); ++i) {
    auto history = LoadAuditHistory(store, conversations[i]);
    ConversationCounts& c = counts[i];
    if (history) Count(*history, c, rules);
    body << "<section class=\"conversation" << (c.held > 0 ? " has-block" : "")
         << "\" id=\"conversation-" << i << "\" data-conversation=\""
         << HtmlEscape(conversations[i].conversation) << "\"><h2>"
         << HtmlEscape(conversations[i].conversation) << "</h2>\n";
    if (!history) {
      body << "<p class=\"errors\">" << HtmlEscape(history.error().ToString())
           << "</p></section>\n";
      continue;
    }
    body << "<ol class=\"timeline\">\n";
    for (const AuditTurn& t : history->turns) WriteTurn(body, *history, t, i);
    body << "</ol>\n";
    const LedgerState& last = history->states.back();
    StateBlockOptions options;
    options.format = StateBlockFormat::kPlain;
    options.include_provenance = true;
    const int64_t at = history->turns.back().record.committed_at_ms;
    auto block = RenderStateBlock(last, at, options);
    body << "<details class=\"state\"><summary>State at version " << last.version
         << "</summary><pre>" << HtmlEscape(block ? block->text : block.error().ToString())
         << "</pre>";
    if (visibility != nullptr) {
      body << "<pre class=\"prompt-marks\">"
           << HtmlEscape(PromptMarksText(MarkPrompt(last, at, *visibility))) << "</pre>";
    }
    body << "</details></section>\n";
  }
  body.close();
  Status written = [&]() -> Status {
    if (!body) return Status::Unavailable("write to " + body_path + " failed");
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return Status::InvalidArgument("cannot write " + path);
    WriteHead(out, conversations, counts, rules);
    std::ifstream sections(body_path, std::ios::binary);
    out << sections.rdbuf() << "</main>" << kSearchScript << "</body></html>\n";
    out.flush();
    if (!out) return Status::Unavailable("write to " + path + " failed");
    return Status::Ok();
  }();
  std::error_code ignored;
  std::filesystem::remove(body_path, ignored);
  return written;
}

}  // namespace taskledger::cli
