// Names of categories, source kinds and update ops, as rules, codecs and
// renderers write them.
#include "taskledger/ledger/entry.h"

namespace taskledger {

std::string_view CategoryName(Category c) {
  switch (c) {
    case Category::kFact:
      return "fact";
    case Category::kIdentifier:
      return "identifier";
    case Category::kConstraint:
      return "constraint";
    case Category::kCondition:
      return "condition";
  }
  return "fact";
}

std::string_view UpdateOpName(UpdateOp op) {
  switch (op) {
    case UpdateOp::kSet:
      return "set";
    case UpdateOp::kRemove:
      return "remove";
    case UpdateOp::kExpire:
      return "expire";
  }
  return "set";
}

std::optional<UpdateOp> ParseUpdateOp(std::string_view name) {
  for (UpdateOp op : {UpdateOp::kSet, UpdateOp::kRemove, UpdateOp::kExpire}) {
    if (UpdateOpName(op) == name) return op;
  }
  return std::nullopt;
}

std::optional<Category> ParseCategory(std::string_view name) {
  if (!name.empty() && name.back() == 's') name.remove_suffix(1);
  for (Category c : kAllCategories) {
    if (CategoryName(c) == name) return c;
  }
  return std::nullopt;
}

std::string_view SourceKindName(SourceKind k) {
  switch (k) {
    case SourceKind::kToolOutput:
      return "tool";
    case SourceKind::kUserMessage:
      return "user";
    case SourceKind::kAgent:
      return "agent";
    case SourceKind::kOperator:
      return "operator";
  }
  return "agent";
}

std::optional<SourceKind> ParseSourceKind(std::string_view name) {
  for (SourceKind k : {SourceKind::kToolOutput, SourceKind::kUserMessage, SourceKind::kAgent,
                       SourceKind::kOperator}) {
    if (SourceKindName(k) == name) return k;
  }
  return std::nullopt;
}

}  // namespace taskledger
