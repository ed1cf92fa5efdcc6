// Template: a key or value template of extract.json ("order.{/order_id}.item.{item_id}"),
// split into literal text and placeholders once, when the pack loads.
//
// Placeholders: {name} the scalar field of the matched node if it is an
// object, else of the nearest enclosing object; {/a/b} an absolute pointer into
// the output; {./a} (or {.}) a pointer relative to the matched node; {$N} the
// N-th wildcard capture or regex group ({$0}: the whole regex match); {@arg}
// the call argument `arg`. Which kinds are allowed depends on where the
// template is used (a text rule has no JSON to point into, a user message no
// call). Immutable after Parse; thread-safe to share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "internal/json_pointer.h"
#include "internal/pointer_table.h"
#include "taskledger/base/status.h"

namespace taskledger::extract_internal {

// Where a template is evaluated, which decides the placeholders it may use.
enum class TemplateScope { kJsonOutput, kTextOutput, kUserMessage };

// Everything a placeholder can refer to for one match.
struct MatchContext {
  const ResolvedPointers* pointers = nullptr;                 // of the JSON output, if any
  const std::vector<const nlohmann::json*>* chain = nullptr;  // root .. matched node
  const std::vector<Capture>* captures = nullptr;             // [0] whole match, [i] i-th
  const nlohmann::json* arguments = nullptr;                  // the call's arguments
  const nlohmann::json& matched() const { return *chain->back(); }
};

class Template {
 public:
  enum class Kind { kLiteral, kField, kAbsPointer, kRelPointer, kCapture, kArg };
  static constexpr PointerTable::Id kNotInterned = ~PointerTable::Id{0};
  struct Part {
    Kind kind = Kind::kLiteral;
    std::string text;  // literal text, field or argument name
    CompiledPointer pointer;
    size_t capture = 0;
    PointerTable::Id node = kNotInterned;  // kAbsPointer: `pointer` in the tool's table
  };

  Template() = default;
  static Result<Template> Parse(std::string_view text, TemplateScope scope);

  const std::string& text() const { return text_; }
  // Interns every {/abs} placeholder in `table`, the table of the tool whose
  // rule this template belongs to; evaluating one needs the output's
  // ResolvedPointers of that table. REQUIRES: called before any use.
  void InternPointers(PointerTable& table);
  // True if the template is exactly one {/abs} or {./rel} placeholder: as a
  // value it then yields the JSON node itself rather than a string.
  bool is_single_pointer() const;

  // Appends the rendering to `out`. Returns false if a placeholder did not
  // resolve to a scalar (string, number, boolean); `*unresolved` then names it.
  // With `escape_ids` (key templates), what each placeholder substitutes is
  // escaped as a key segment (taskledger/base/key_segment.h), so an id holding
  // `.`, `{`, `}`, `*` or `%` stays one segment; literal text is kept as is.
  bool Render(const MatchContext& ctx, std::string& out, std::string* unresolved,
              bool escape_ids = false) const;
  // REQUIRES: is_single_pointer(). The node it points to, or nullptr.
  const nlohmann::json* ResolveSingle(const MatchContext& ctx) const;

 private:
  static const nlohmann::json* ResolveAbsolute(const Part& p, const MatchContext& ctx);

  std::string text_;
  std::vector<Part> parts_;
};

// Appends a scalar as template text ("abc", "42", "1.5", "true"); false for
// null, arrays and objects.
bool AppendScalar(const nlohmann::json& v, std::string& out);

}  // namespace taskledger::extract_internal
