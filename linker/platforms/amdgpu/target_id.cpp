#include "linker/platforms/amdgpu/target_id.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/TargetParser/TargetParser.h"
#include "llvm/TargetParser/Triple.h"

namespace hotlink::detail::amdgpu {

namespace {

// "proc:f1+:f2-" split at its colons; nullopt when a feature is not NAME
// followed by + or -, or names a feature twice.
std::optional<TargetId> split_target_id(std::string_view spelled) {
  llvm::StringRef rest(spelled.data(), spelled.size());
  auto [processor, features] = rest.split(':');
  if (processor.empty())
    return std::nullopt;
  TargetId id;
  id.processor = processor.str();
  while (!features.empty()) {
    auto [feature, next] = features.split(':');
    if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-'))
      return std::nullopt;
    if (!id.features.emplace(feature.drop_back().str(), feature.back() == '+').second)
      return std::nullopt;
    features = next;
  }
  return id;
}

} // namespace

std::string canonical_target_id(std::string_view processor, const std::map<std::string, bool> &features) {
  std::string id(processor);
  for (const auto &[name, on] : features)
    id += ":" + name + (on ? "+" : "-");
  return id;
}

std::string TargetId::canonical() const { return canonical_target_id(processor, features); }

std::optional<TargetId> parse_target_id(std::string_view spelled) {
  auto id = split_target_id(spelled);
  if (!id)
    return std::nullopt;
  llvm::Triple triple("amdgcn-amd-amdhsa");
  llvm::StringRef processor = llvm::AMDGPU::getCanonicalArchName(triple, id->processor);
  llvm::AMDGPU::GPUKind kind = llvm::AMDGPU::parseArchAMDGCN(processor);
  if (processor.empty() || kind == llvm::AMDGPU::GK_NONE)
    return std::nullopt;
  id->processor = processor.str();
  unsigned allowed = llvm::AMDGPU::getArchAttrAMDGCN(kind);
  for (const auto &[name, on] : id->features) {
    bool known = (name == "xnack" && (allowed & llvm::AMDGPU::FEATURE_XNACK)) ||
                 (name == "sramecc" && (allowed & llvm::AMDGPU::FEATURE_SRAMECC));
    if (!known)
      return std::nullopt;
  }
  return id;
}

bool compatible_target_ids(std::string_view provided, std::string_view requested) {
  auto p = split_target_id(provided), r = split_target_id(requested);
  if (!p || !r || p->processor != r->processor)
    return false;
  for (const auto &[name, on] : p->features) {
    auto it = r->features.find(name);
    if (it == r->features.end() || it->second != on)
      return false; // a fixed feature runs only where it is asked for the same way
  }
  return true;
}

} // namespace hotlink::detail::amdgpu
