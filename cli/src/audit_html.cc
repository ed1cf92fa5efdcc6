// WriteAuditHtml (see audit_html.h). Conversations are loaded and written one
// at a time, so a page for a whole replayed corpus needs one conversation in
// memory, not the corpus.
#include "audit_html.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "audit_history.h"
#include "taskledger/render/state_block.h"

namespace taskledger::cli {
namespace {

constexpr const char* kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:1.5rem;background:#f6f7f9;color:#1d2330}
h1{margin-top:0}h2{margin:.2rem 0 .8rem}h3{margin:.2rem 0;font-size:1rem}
.summary{color:#555}
nav ul{columns:3;padding-left:1.2rem}
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

void WriteDecision(std::ostream& out, const nlohmann::json& d, const std::string& id) {
  const std::string outcome = Str(d, "decision");
  const bool blocked = outcome != "allow";
  out << "<div class=\"decision " << HtmlEscape(outcome) << (blocked ? " blocked" : "")
      << "\" id=\"" << id << "\" data-rule=\"" << HtmlEscape(Str(d, "rule"))
      << "\" data-version-seen=\"" << HtmlEscape(Str(d, "version_seen")) << "\">"
      << "<span class=\"outcome\">" << HtmlEscape(outcome) << "</span>"
      << "<code class=\"tool\">" << HtmlEscape(Str(d, "tool")) << "</code> "
      << "<span class=\"meta\">call " << HtmlEscape(Str(d, "call_id")) << ", decided on version "
      << HtmlEscape(Str(d, "version_seen")) << " (+" << HtmlEscape(Str(d, "staged_seen"))
      << " staged)";
  if (d.contains("latency_us")) out << ", " << HtmlEscape(Str(d, "latency_us")) << " µs";
  out << "</span>";
  if (!Str(d, "rule").empty())
    out << " <span class=\"rule\">" << HtmlEscape(Str(d, "rule")) << "</span>";
  if (!Str(d, "reason").empty())
    out << "<p class=\"reason\">" << HtmlEscape(Str(d, "reason")) << "</p>";
  auto rules = d.find("rules");
  if (rules != d.end() && rules->is_array() && !rules->empty()) {
    out << "<details><summary>" << rules->size() << " rules evaluated</summary><table>"
        << "<tr><th>rule</th><th>outcome</th><th>reason</th></tr>";
    for (const auto& r : *rules) {
      out << "<tr><td><code>" << HtmlEscape(Str(r, "id")) << "</code></td><td>"
          << HtmlEscape(Str(r, "outcome")) << "</td><td>" << HtmlEscape(Str(r, "reason"))
          << "</td></tr>";
    }
    out << "</table></details>";
  }
  out << "</div>\n";
}

void WriteTurn(std::ostream& out, const AuditTurn& t, size_t conv_index) {
  const TurnRecord& r = t.record;
  bool has_block = false;
  for (const auto& d : r.decisions) has_block = has_block || Str(d, "decision") != "allow";
  const std::string turn_id = "turn-" + std::to_string(conv_index) + "-" + std::to_string(r.turn);
  out << "<li class=\"turn" << (has_block ? " has-block" : "") << "\" id=\"" << turn_id
      << "\" data-version=\"" << r.turn << "\"><h3>Turn " << r.turn
      << " <span class=\"meta\">committed " << UtcTime(r.committed_at_ms) << "</span></h3>\n";
  for (size_t k = 0; k < r.decisions.size(); ++k) {
    WriteDecision(out, r.decisions[k], turn_id + "-decision-" + std::to_string(k));
  }
  if (!r.calls.empty()) {
    out << "<table "
           "class=\"calls\"><tr><th>call</th><th>tool</th><th>arguments</th><th>outcome</th></tr>";
    for (const CallRecord& c : r.calls) {
      out << "<tr class=\"call " << HtmlEscape(c.outcome) << "\"><td>" << HtmlEscape(c.call_id)
          << "</td><td><code>" << HtmlEscape(c.tool) << "</code></td><td><code>"
          << HtmlEscape(Json(c.arguments)) << "</code></td><td>" << HtmlEscape(c.outcome)
          << "</td></tr>";
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
    for (const auto& e : r.errors) out << "<li>" << HtmlEscape(Json(e)) << "</li>";
    out << "</ul>\n";
  }
  out << "</li>\n";
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
                      const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::InvalidArgument("cannot write " + path);
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>taskledger audit</title><style>"
      << kStyle << "</style></head><body>\n<h1>taskledger audit</h1>\n";
  out << "<p class=\"summary\">" << conversations.size() << " conversation"
      << (conversations.size() == 1 ? "" : "s") << ". Decisions that blocked a call are red.</p>\n";
  if (conversations.size() > 1) {
    out << "<nav><ul>";
    for (size_t i = 0; i < conversations.size(); ++i) {
      out << "<li><a href=\"#conversation-" << i << "\">"
          << HtmlEscape(conversations[i].conversation) << "</a></li>";
    }
    out << "</ul></nav>\n";
  }
  for (size_t i = 0; i < conversations.size(); ++i) {
    auto history = LoadAuditHistory(store, conversations[i]);
    out << "<section class=\"conversation\" id=\"conversation-" << i << "\" data-conversation=\""
        << HtmlEscape(conversations[i].conversation) << "\"><h2>"
        << HtmlEscape(conversations[i].conversation) << "</h2>\n";
    if (!history) {
      out << "<p class=\"errors\">" << HtmlEscape(history.error().ToString()) << "</p></section>\n";
      continue;
    }
    out << "<ol class=\"timeline\">\n";
    for (const AuditTurn& t : history->turns) WriteTurn(out, t, i);
    out << "</ol>\n";
    const LedgerState& last = history->states.back();
    StateBlockOptions options;
    options.format = StateBlockFormat::kPlain;
    options.include_provenance = true;
    const int64_t at = history->turns.back().record.committed_at_ms;
    auto block = RenderStateBlock(last, at, options);
    out << "<details class=\"state\"><summary>State at version " << last.version
        << "</summary><pre>" << HtmlEscape(block ? block->text : block.error().ToString())
        << "</pre></details></section>\n";
  }
  out << "</body></html>\n";
  out.flush();
  if (!out) return Status::Unavailable("write to " + path + " failed");
  return Status::Ok();
}

}  // namespace taskledger::cli
