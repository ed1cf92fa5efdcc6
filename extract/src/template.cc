// Parsing and rendering extract.json key/value templates. Pure functions;
// thread-safe.
#include "internal/template.h"

#include <cassert>

#include "taskledger/base/key_segment.h"

namespace taskledger::extract_internal {
namespace {

Result<Template::Part> ParsePlaceholder(std::string_view body, std::string_view whole,
                                        TemplateScope scope) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("template '" + std::string(whole) + "': {" + std::string(body) +
                                   "} " + why);
  };
  Template::Part part;
  if (body.empty()) return bad("is empty");
  if (body[0] == '$') {
    std::string_view digits = body.substr(1);
    if (digits.empty() || digits.size() > 3) return bad("needs a capture number");
    size_t n = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return bad("needs a capture number");
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (n == 0 && scope == TemplateScope::kJsonOutput) {
      return bad("is not available in a path mapping (wildcards count from $1)");
    }
    part.kind = Template::Kind::kCapture;
    part.capture = n;
    return part;
  }
  if (body[0] == '@') {
    if (scope == TemplateScope::kUserMessage) return bad("is not available for a user message");
    if (body.size() == 1) return bad("needs an argument name");
    part.kind = Template::Kind::kArg;
    part.text = std::string(body.substr(1));
    return part;
  }
  bool abs = body[0] == '/';
  bool rel = body == "." || body.starts_with("./");
  if (abs || rel || scope == TemplateScope::kJsonOutput) {
    if (scope != TemplateScope::kJsonOutput) return bad("needs a JSON output");
    if (abs || rel) {
      auto p = CompiledPointer::Parse(rel ? body.substr(1) : body, /*allow_wildcards=*/false);
      if (!p.has_value()) return bad(p.error().message());
      part.kind = abs ? Template::Kind::kAbsPointer : Template::Kind::kRelPointer;
      part.pointer = std::move(p).value();
    } else {
      part.kind = Template::Kind::kField;
      part.text = std::string(body);
    }
    return part;
  }
  return bad("is not a capture ({$N}) or an argument ({@name})");
}

// The field `name` of the matched node if it is an object, else of the
// nearest object enclosing it.
const nlohmann::json* FindField(const MatchContext& ctx, const std::string& name) {
  if (ctx.chain == nullptr) return nullptr;
  for (auto it = ctx.chain->rbegin(); it != ctx.chain->rend(); ++it) {
    if (!(*it)->is_object()) continue;
    return FindMember((*it)->get_ref<const nlohmann::json::object_t&>(), name);
  }
  return nullptr;
}

}  // namespace

bool AppendScalar(const nlohmann::json& v, std::string& out) {
  switch (v.type()) {
    case nlohmann::json::value_t::string:
      out += v.get_ref<const std::string&>();
      return true;
    case nlohmann::json::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      return true;
    case nlohmann::json::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return true;
    case nlohmann::json::value_t::number_float:
      out += v.dump();
      return true;
    case nlohmann::json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return true;
    default:
      return false;
  }
}

Result<Template> Template::Parse(std::string_view text, TemplateScope scope) {
  Template t;
  t.text_ = std::string(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find('{', pos);
    if (open == std::string_view::npos) open = text.size();
    if (open > pos)
      t.parts_.push_back(Part{Kind::kLiteral, std::string(text.substr(pos, open - pos)), {}, 0});
    if (open == text.size()) break;
    size_t close = text.find('}', open + 1);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("template '" + std::string(text) + "' has an unclosed '{'");
    }
    auto part = ParsePlaceholder(text.substr(open + 1, close - open - 1), text, scope);
    if (!part.has_value()) return part.error();
    t.parts_.push_back(std::move(part).value());
    pos = close + 1;
  }
  return t;
}

void Template::InternPointers(PointerTable& table) {
  for (Part& p : parts_) {
    if (p.kind == Kind::kAbsPointer) p.node = table.Intern(p.pointer, p.pointer.segments().size());
  }
}

// An {/abs} placeholder, from the output's pointers resolved once.
const nlohmann::json* Template::ResolveAbsolute(const Part& p, const MatchContext& ctx) {
  assert(p.node != kNotInterned);
  return ctx.pointers != nullptr ? ctx.pointers->at(p.node) : nullptr;
}

bool Template::is_single_pointer() const {
  return parts_.size() == 1 &&
         (parts_[0].kind == Kind::kAbsPointer || parts_[0].kind == Kind::kRelPointer);
}

const nlohmann::json* Template::ResolveSingle(const MatchContext& ctx) const {
  const Part& p = parts_[0];
  if (p.kind == Kind::kAbsPointer) return ResolveAbsolute(p, ctx);
  return ctx.chain ? p.pointer.Resolve(ctx.matched()) : nullptr;
}

bool Template::Render(const MatchContext& ctx, std::string& out, std::string* unresolved,
                      bool escape_ids) const {
  for (const Part& p : parts_) {
    const nlohmann::json* node = nullptr;
    const size_t start = out.size();
    switch (p.kind) {
      case Kind::kLiteral:
        out += p.text;
        continue;
      case Kind::kCapture:
        if (ctx.captures != nullptr && p.capture < ctx.captures->size() &&
            (*ctx.captures)[p.capture].present) {
          const Capture& c = (*ctx.captures)[p.capture];
          if (c.is_index) {
            out += std::to_string(c.index);
          } else {
            out += c.text;
          }
          if (escape_ids) EscapeKeySegmentTail(out, start);
          continue;
        }
        break;
      case Kind::kArg:
        if (ctx.arguments != nullptr && ctx.arguments->is_object()) {
          node = FindMember(ctx.arguments->get_ref<const nlohmann::json::object_t&>(), p.text);
        }
        break;
      case Kind::kField:
        node = FindField(ctx, p.text);
        break;
      case Kind::kAbsPointer:
        node = ResolveAbsolute(p, ctx);
        break;
      case Kind::kRelPointer:
        if (ctx.chain != nullptr) node = p.pointer.Resolve(ctx.matched());
        break;
    }
    if (node != nullptr && AppendScalar(*node, out)) {
      if (escape_ids) EscapeKeySegmentTail(out, start);
      continue;
    }
    if (unresolved != nullptr) {
      switch (p.kind) {
        case Kind::kCapture:
          *unresolved = "{$" + std::to_string(p.capture) + "}";
          break;
        case Kind::kArg:
          *unresolved = "{@" + p.text + "}";
          break;
        case Kind::kField:
          *unresolved = "{" + p.text + "}";
          break;
        case Kind::kAbsPointer:
          *unresolved = "{" + p.pointer.text() + "}";
          break;
        default:
          *unresolved = "{." + p.pointer.text() + "}";
          break;
      }
    }
    return false;
  }
  return true;
}

}  // namespace taskledger::extract_internal
