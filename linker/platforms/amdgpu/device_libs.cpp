#include "linker/platforms/amdgpu/device_libs.h"
#include "base/memo.h"

#include "linker/platforms/clang_driver.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <mutex>
#include <tuple>

namespace hotlink::detail::amdgpu {

namespace {

// Debian's rocm-device-libs: /usr/lib/<multiarch>/amdgcn/bitcode, which
// clang's ROCm detection (it looks for a ROCm tree) does not find alone.
std::string debian_device_libs() {
  llvm::Triple host(llvm::sys::getDefaultTargetTriple());
  std::string dir = "/usr/lib/" + host.getArchName().str() + "-linux-gnu/amdgcn/bitcode";
  return llvm::sys::fs::is_directory(dir) ? dir : std::string();
}

template <class K, class V, class F> Expected<V> memoized(const K &key, F compute) {
  static base::Memo<K, V> known;
  return known.compute_once(key, compute);
}

} // namespace

Expected<LinkLine> link_line(const std::string &triple, const std::string &target_id) {
  return memoized<std::string, LinkLine>(target_id, [&]() -> Expected<LinkLine> {
    auto line = driver_link_job(triple, {"clang", "--target=" + triple, "-mcpu=" + target_id, "-nogpulib", kDriverInputs},
                                "--mcpu", "pass an AMD target ID such as gfx90a or gfx90a:xnack+");
    if (!line)
      return line.take_error();
    return line.value();
  });
}

Expected<std::vector<std::string>> device_libraries(const std::string &triple, const std::string &target_id,
                                                    unsigned version, const std::string &dir,
                                                    DeviceLanguage language) {
  using Key = std::tuple<std::string, unsigned, std::string, DeviceLanguage>;
  return memoized<Key, std::vector<std::string>>(
      Key{target_id, version, dir, language}, [&]() -> Expected<std::vector<std::string>> {
        std::string where = dir.empty() ? debian_device_libs() : dir;
        bool hip = language == DeviceLanguage::Hip;
        // HIP's device job is an offload job of the host's compile.
        std::string driver_triple = hip ? llvm::sys::getDefaultTargetTriple() : triple;
        std::vector<std::string> args = {"clang", "--target=" + driver_triple};
        if (hip)
          args.insert(args.end(), {"--offload-arch=" + target_id, "--cuda-device-only", "-nogpuinc"});
        else
          args.push_back("-mcpu=" + target_id);
        if (version)
          args.push_back("-mcode-object-version=" + std::to_string(version));
        if (!where.empty())
          args.push_back("--rocm-device-lib-path=" + where);
        if (hip)
          args.insert(args.end(), {"-x", "hip", "-c", "hotlink-device.hip"});
        else
          args.insert(args.end(), {"-x", "cl", "-c", "hotlink-device.cl"});
        auto jobs = driver_jobs(driver_triple, args, "--device-libs",
                                "install the device libraries (Debian: apt-get install rocm-device-libs), pass "
                                "their bitcode folder with --device-libs DIR, or link without them "
                                "(--device-libs none)");
        if (!jobs)
          return jobs.take_error();
        std::vector<std::string> libs;
        for (const DriverJob &job : *jobs)
          for (std::size_t i = 0; i + 1 < job.args.size(); ++i)
            if (job.args[i] == "-mlink-builtin-bitcode")
              libs.push_back(job.args[i + 1]);
        if (libs.empty())
          return make_error(ErrorCode::BadRequest,
                            "clang's driver names no device library for " + target_id +
                                (where.empty() ? std::string() : " in " + where),
                            {}, "--device-libs", "pass the folder that holds ocml.bc with --device-libs DIR");
        return libs;
      });
}

} // namespace hotlink::detail::amdgpu
