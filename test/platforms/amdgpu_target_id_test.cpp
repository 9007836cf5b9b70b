// AMD target IDs as hotlink reads them (linker/platforms/amdgpu/target_id.h)
// against clang's own TargetID functions, the oracle, for every processor
// LLVM 22 knows and every spelling a user can write: hotlink answers them
// without loading libclang-cpp, and must answer them the same way.
#include "linker/platforms/amdgpu/target_id.h"

#include "clang/Basic/TargetID.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/TargetParser.h"
#include "llvm/TargetParser/Triple.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace hotlink::detail;

namespace {

std::optional<std::string> clang_canonical(const std::string &spelled) {
  llvm::StringMap<bool> features;
  auto processor = clang::parseTargetID(llvm::Triple("amdgcn-amd-amdhsa"), spelled, &features);
  if (!processor)
    return std::nullopt;
  return clang::getCanonicalTargetID(*processor, features);
}

std::vector<std::string> processors() {
  llvm::SmallVector<llvm::StringRef, 128> names;
  llvm::AMDGPU::fillValidArchListAMDGCN(names);
  std::vector<std::string> out(names.begin(), names.end());
  out.insert(out.end(), {"tahiti", "fiji", "gfx9-generic", "gfx0", "x86-64", ""});
  return out;
}

const std::vector<std::string> kSuffixes = {
    "", ":xnack+", ":xnack-", ":sramecc+", ":sramecc-", ":sramecc+:xnack-", ":xnack-:sramecc+",
    ":xnack+:xnack+", ":xnack+:xnack-", ":xnack", ":+", ":", "::xnack+", ":wavefrontsize64+", ":XNACK+"};

} // namespace

TEST(TargetId, EverySpellingCanonicalizesAsClangDoes) {
  std::size_t valid = 0, checked = 0;
  for (const std::string &p : processors())
    for (const std::string &s : kSuffixes) {
      std::string spelled = p + s;
      if (spelled.empty() || spelled.find("::") != std::string::npos || spelled.back() == ':' ||
          spelled.find(":+") != std::string::npos)
        continue; // clang asserts on an empty feature (StringRef::back of "")
      auto ours = amdgpu::parse_target_id(spelled);
      auto theirs = clang_canonical(spelled);
      ASSERT_EQ(ours.has_value(), theirs.has_value()) << spelled;
      ++checked;
      if (ours) {
        EXPECT_EQ(ours->canonical(), *theirs) << spelled;
        ++valid;
      }
    }
  EXPECT_GT(valid, 100u) << "LLVM 22 knows dozens of processors with xnack and sramecc";
  EXPECT_GT(checked, 500u);
}

TEST(TargetId, MalformedSpellingsAreRefusedWithoutAsserting) {
  for (const char *s : {"", ":", "gfx90a::xnack+", "gfx90a:+", ":xnack+", "gfx90a:xnack"})
    EXPECT_FALSE(amdgpu::parse_target_id(s)) << s;
  EXPECT_EQ(amdgpu::parse_target_id("fiji")->canonical(), "gfx803");
}

TEST(TargetId, CompatibilityIsClangs) {
  std::vector<std::string> ids;
  for (const char *p : {"gfx90a", "gfx908", "gfx1030", "gfx942"})
    for (const std::string &s : kSuffixes)
      if (auto id = clang_canonical(std::string(p) + s))
        ids.push_back(*id);
  ASSERT_GT(ids.size(), 12u);
  std::size_t compatible = 0;
  for (const std::string &provided : ids)
    for (const std::string &requested : ids) {
      bool theirs = clang::isCompatibleTargetID(provided, requested);
      EXPECT_EQ(amdgpu::compatible_target_ids(provided, requested), theirs) << provided << " as " << requested;
      compatible += theirs;
    }
  EXPECT_GT(compatible, ids.size()) << "some pairs besides the identical ones are compatible";
}
