// Pack constants (constants.h): parsing pack.json's `constants` object and
// feeding it to a provenance index.
#include "taskledger/provenance/constants.h"

#include <string>

namespace taskledger::provenance {
namespace {

Status AddValue(std::vector<Constant>& out, const std::string& name, const nlohmann::json& v,
                const std::string& where) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument("constants: " + where + " must be a non-empty string");
  }
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() > kMaxConstantBytes) {
    return Status::InvalidArgument("constants: " + where + " is longer than " +
                                   std::to_string(kMaxConstantBytes) + " bytes");
  }
  if (out.size() >= kMaxConstants) {
    return Status::InvalidArgument("constants: more than " + std::to_string(kMaxConstants) +
                                   " values");
  }
  out.push_back({name, s});
  return Status::Ok();
}

}  // namespace

Result<std::vector<Constant>> ParseConstants(const nlohmann::json& constants) {
  std::vector<Constant> out;
  if (constants.is_null()) return out;
  if (!constants.is_object()) {
    return Status::InvalidArgument("constants must be an object of name: value or name: [values]");
  }
  for (const auto& [name, v] : constants.items()) {
    if (name.empty()) return Status::InvalidArgument("constants: a name is empty");
    if (!v.is_array()) {
      if (Status s = AddValue(out, name, v, "'" + name + "'"); !s.ok()) return s;
      continue;
    }
    if (v.empty()) return Status::InvalidArgument("constants: '" + name + "' is an empty list");
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = "'" + name + "'[" + std::to_string(i) + "]";
      if (Status s = AddValue(out, name, v[i], where); !s.ok()) return s;
    }
  }
  return out;
}

Status AddConstants(ProvenanceIndex& index, const nlohmann::json& constants) {
  auto parsed = ParseConstants(constants);
  if (!parsed) return parsed.error();
  for (const Constant& c : parsed.value()) {
    if (Status s = index.AddConstant(c.name, c.value); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace taskledger::provenance
