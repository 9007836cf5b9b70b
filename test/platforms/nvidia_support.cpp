#include "test/platforms/nvidia_support.h"

#include "hotlink/verify_target.h"
#include "linker/platforms/nvptx/nvjitlink.h"
#include "support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#if defined(__SANITIZE_ADDRESS__)
// nvJitLink keeps allocations of its own past nvJitLinkDestroy (most on a
// failed link's path); LeakSanitizer reports them from inside
// libnvJitLink.so, which is not hotlink's to free. Visible: the runtime
// looks the hook up in the executable.
extern "C" __attribute__((visibility("default"))) const char *__lsan_default_suppressions() {
  return "leak:libnvJitLink.so\n";
}
#endif

namespace hotlink::test {

std::string nvjitlink_missing() {
  auto lib = detail::nvjitlink::find_library();
  return lib ? "" : "nvJitLink is not installed: " + lib.error().message;
}

std::string cuda_root_with(const std::string &name) {
  const char *home = std::getenv("CUDA_HOME");
  for (std::string root : {std::string(home ? home : ""), std::string("/usr/local/cuda")})
    if (!root.empty() && exists(root + "/bin/" + name))
      return root;
  return {};
}

std::string cuda_tool(const std::string &name) {
  std::string root = cuda_root_with(name);
  return root.empty() ? root : root + "/bin/" + name;
}

std::vector<std::string> resources(const std::vector<std::uint8_t> &cubin) {
  auto d = describe_artifact(cubin, "k.cubin");
  EXPECT_TRUE(d.ok()) << (d ? "" : d.error().to_string());
  std::vector<std::string> out;
  if (!d)
    return out;
  for (const auto &[key, value] : d->properties)
    out.push_back(key + "=" + value);
  for (const ExportDetails &k : d->exports) {
    std::string line = k.name + ":";
    for (const auto &[key, value] : k.properties)
      line += " " + key + "=" + value;
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace hotlink::test
