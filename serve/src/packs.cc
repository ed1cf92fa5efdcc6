// The packs of a Service (taskledger/serve/service.h): compiling a pack
// before any request may use it, the default pack and the per-tenant ones,
// their reloads (a pack that fails keeps its old version serving and
// remembers why, for /readyz and the reload log), the set of tenants a
// SIGHUP re-reads (SetTenants), and the pool of policy
// checkers and the tool classes each loaded pack keeps. Thread-safe: the map of packs is guarded
// by Impl::pack_mu, each pool by its own mutex.
#include <iterator>
#include <utility>

#include "internal/service_impl.h"

namespace taskledger::serve {
namespace {

// Compiles what every request needs from `pack`, and checks that its Lua
// loads, before any request may use it. The checker built for the check is
// the pool's first.
Result<std::shared_ptr<const LoadedPack>> LoadPack(std::shared_ptr<const RulePack> pack) {
  if (!pack) return Status::InvalidArgument("no rule pack");
  auto rules = CompileExtractionRules(*pack);
  if (!rules) return rules.error();
  auto checker = PolicyChecker::Create(pack);
  if (!checker) return checker.error();
  const nlohmann::json& manifest = pack->manifest();
  auto section = manifest.find("render");
  auto visibility =
      RenderVisibility::FromJson(section == manifest.end() ? nlohmann::json() : *section);
  if (!visibility) {
    return Status::InvalidArgument("pack.json \"render\" of " + pack->name() + ": " +
                                   visibility.error().message());
  }
  auto loaded = std::make_shared<LoadedPack>();
  loaded->visibility = std::move(visibility).value();
  loaded->pack = std::move(pack);
  loaded->extraction_rules = std::move(rules).value();
  loaded->Return(std::move(checker).value());
  return std::shared_ptr<const LoadedPack>(std::move(loaded));
}

// Loads `pack` into the slot of `key` (the default pack or a tenant's); on
// failure the slot keeps its pack and records why.
Status Install(Service::Impl& impl, const std::string& key,
               Result<std::shared_ptr<const RulePack>> pack) {
  Result<std::shared_ptr<const LoadedPack>> loaded =
      pack ? LoadPack(std::move(pack).value())
           : Result<std::shared_ptr<const LoadedPack>>(pack.error());
  std::lock_guard<std::mutex> lock(impl.pack_mu);
  auto slot = impl.packs.find(key);
  if (!loaded) {
    impl.reloads_failed.fetch_add(1, std::memory_order_relaxed);
    if (slot != impl.packs.end()) slot->second.reload_error = loaded.error().ToString();
    return loaded.error();
  }
  impl.packs[key] = PackSlot{std::move(loaded).value(), ""};
  impl.reloads.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<PolicyChecker>> LoadedPack::Borrow() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<PolicyChecker> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return PolicyChecker::Create(pack);  // outside the lock: it runs the pack's Lua
}

void LoadedPack::Return(std::unique_ptr<PolicyChecker> checker) const {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(checker));
}

CallClass LoadedPack::ClassOf(const std::string& tool) const {
  // Tool names come from clients: the cache starts over rather than grow
  // without bound.
  constexpr size_t kMaxClasses = 4096;
  std::lock_guard<std::mutex> lock(classes_mu_);
  if (auto it = classes_.find(tool); it != classes_.end()) return it->second;
  if (classes_.size() >= kMaxClasses) classes_.clear();
  return classes_.emplace(tool, PackClassOf(*pack, tool)).first->second;
}

Status InitPacks(Service::Impl& impl) {
  auto loaded = LoadPack(impl.options.pack);
  if (!loaded) return loaded.error();
  impl.packs[Service::Impl::kDefaultPack] = PackSlot{std::move(loaded).value(), ""};
  for (const auto& [tenant, pack] : impl.options.tenant_packs) {
    if (tenant.empty()) return Status::InvalidArgument("a tenant pack needs a tenant name");
    auto l = LoadPack(pack);
    if (!l) {
      return Status(l.error().code(), "the pack of tenant " + tenant + ": " + l.error().message());
    }
    impl.packs[tenant] = PackSlot{std::move(l).value(), ""};
  }
  impl.time_limits = impl.options.tenant_time_limit_ms;
  return Status::Ok();
}

Status Service::SetPack(std::shared_ptr<const RulePack> pack) {
  return Install(*impl_, Impl::kDefaultPack, std::move(pack));
}

Status Service::ReloadPack(const std::string& dir) {
  return Install(*impl_, Impl::kDefaultPack, RulePack::Load(dir));
}

Status Service::SetTenantPack(const std::string& tenant, std::shared_ptr<const RulePack> pack) {
  if (tenant.empty()) return Status::InvalidArgument("a tenant pack needs a tenant name");
  return Install(*impl_, tenant, std::move(pack));
}

Status Service::ReloadTenantPack(const std::string& tenant, const std::string& dir) {
  if (tenant.empty()) return Status::InvalidArgument("a tenant pack needs a tenant name");
  return Install(*impl_, tenant, RulePack::Load(dir));
}

Status Service::SetTenants(const std::map<std::string, TenantSettings>& tenants) {
  for (const auto& [tenant, t] : tenants) {
    if (tenant.empty()) return Status::InvalidArgument("a tenant needs a name");
    if (t.time_limit_ms < -1) {
      return Status::InvalidArgument("the time limit of " + tenant + " is negative");
    }
  }
  // Compiled before the lock: building a checker runs the pack's Lua.
  std::map<std::string, Result<std::shared_ptr<const LoadedPack>>> loaded;
  for (const auto& [tenant, t] : tenants) {
    if (t.rules.empty()) continue;
    auto pack = RulePack::Load(t.rules);
    loaded.emplace(tenant, pack ? LoadPack(std::move(pack).value())
                                : Result<std::shared_ptr<const LoadedPack>>(pack.error()));
  }
  Status first = Status::Ok();
  std::lock_guard<std::mutex> lock(impl_->pack_mu);
  for (auto it = impl_->packs.begin(); it != impl_->packs.end();) {
    bool keeps = it->first == Impl::kDefaultPack || loaded.count(it->first) != 0;
    it = keeps ? std::next(it) : impl_->packs.erase(it);
  }
  for (auto& [tenant, l] : loaded) {
    if (l) {
      impl_->packs[tenant] = PackSlot{std::move(l).value(), ""};
      impl_->reloads.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    impl_->reloads_failed.fetch_add(1, std::memory_order_relaxed);
    impl_->packs[tenant].reload_error = l.error().ToString();  // a new slot holds no pack
    if (first.ok()) {
      first = Status(l.error().code(), "the pack of tenant " + tenant + ": " + l.error().message());
    }
  }
  impl_->time_limits.clear();
  for (const auto& [tenant, t] : tenants) {
    if (t.time_limit_ms >= 0) impl_->time_limits[tenant] = t.time_limit_ms;
  }
  return first;
}

std::shared_ptr<const RulePack> Service::pack() const {
  return impl_->Loaded(Impl::kDefaultPack)->pack;
}

std::shared_ptr<const RulePack> Service::PackOf(const std::string& tenant) const {
  auto loaded = impl_->Loaded(tenant);
  return loaded ? loaded->pack : nullptr;
}

std::vector<PackStatus> Service::Packs() const {
  std::lock_guard<std::mutex> lock(impl_->pack_mu);
  std::vector<PackStatus> out;
  for (const auto& [tenant, slot] : impl_->packs) {  // "" (the default) sorts first
    if (!slot.loaded) {
      out.push_back({tenant, "", "", slot.reload_error});
      continue;
    }
    out.push_back(
        {tenant, slot.loaded->pack->name(), slot.loaded->pack->version(), slot.reload_error});
  }
  return out;
}

}  // namespace taskledger::serve
