#include "linker/platforms/nvptx/nvjitlink.h"
#include "base/memo.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <mutex>
#include <sys/stat.h>

namespace hotlink::detail::nvjitlink {

namespace {

// nvJitLink.h's C API, as the library exports it (the 13.0 ABI; 12.x
// exports the same functions unversioned too).
using Handle = void *;
using CreateFn = int (*)(Handle *, std::uint32_t, const char **);
using DestroyFn = int (*)(Handle *);
using AddDataFn = int (*)(Handle, int, const void *, std::size_t, const char *);
using CompleteFn = int (*)(Handle);
using SizeFn = int (*)(Handle, std::size_t *);
using CopyFn = int (*)(Handle, void *);
using VersionFn = int (*)(unsigned *, unsigned *);

// nvJitLinkInputType's values.
int input_type(InputKind k) {
  switch (k) {
  case InputKind::Cubin: return 1;
  case InputKind::Ptx: return 2;
  case InputKind::LtoIr: return 3;
  case InputKind::Fatbin: return 4;
  case InputKind::Object: return 5;
  case InputKind::Library: return 6;
  }
  return 0;
}

struct Api {
  std::string path, failure;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  AddDataFn add_data = nullptr;
  CompleteFn complete = nullptr;
  SizeFn cubin_size = nullptr, error_log_size = nullptr, info_log_size = nullptr, ptx_size = nullptr;
  CopyFn cubin = nullptr, error_log = nullptr, info_log = nullptr, ptx = nullptr;
  VersionFn version = nullptr;
  std::string version_text;
};

bool is_file(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

const char *const kSonames[] = {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"};

// The dynamic loader's answer for a soname, found by loading it there
// only when no place above holds the library.
std::string loader_path_file() {
  for (const char *so : kSonames) {
    void *h = ::dlopen(so, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h)
      h = ::dlopen(so, RTLD_LAZY | RTLD_LOCAL);
    if (!h)
      continue;
    char origin[PATH_MAX] = {};
    bool found = ::dlinfo(h, RTLD_DI_ORIGIN, origin) == 0;
    ::dlclose(h);
    if (found)
      return std::string(origin) + "/" + so;
  }
  return {};
}

Api load_api() {
  Api a;
  auto path = find_library();
  if (!path) {
    a.failure = path.error().message + " (" + path.error().hint + ")";
    return a;
  }
  a.path = *path;
  void *h = ::dlopen(a.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = ::dlerror();
    a.failure = "cannot load " + a.path + ": " + (why ? why : "dlopen failed");
    return a;
  }
  auto sym = [&](const char *base) -> void * {
    for (const char *suffix : {"_13_0", "_12_0"})
      if (void *p = ::dlsym(h, (std::string("__") + base + suffix).c_str()))
        return p;
    return ::dlsym(h, base);
  };
  a.create = reinterpret_cast<CreateFn>(sym("nvJitLinkCreate"));
  a.destroy = reinterpret_cast<DestroyFn>(sym("nvJitLinkDestroy"));
  a.add_data = reinterpret_cast<AddDataFn>(sym("nvJitLinkAddData"));
  a.complete = reinterpret_cast<CompleteFn>(sym("nvJitLinkComplete"));
  a.cubin_size = reinterpret_cast<SizeFn>(sym("nvJitLinkGetLinkedCubinSize"));
  a.cubin = reinterpret_cast<CopyFn>(sym("nvJitLinkGetLinkedCubin"));
  a.error_log_size = reinterpret_cast<SizeFn>(sym("nvJitLinkGetErrorLogSize"));
  a.error_log = reinterpret_cast<CopyFn>(sym("nvJitLinkGetErrorLog"));
  a.info_log_size = reinterpret_cast<SizeFn>(sym("nvJitLinkGetInfoLogSize"));
  a.info_log = reinterpret_cast<CopyFn>(sym("nvJitLinkGetInfoLog"));
  a.ptx_size = reinterpret_cast<SizeFn>(sym("nvJitLinkGetLinkedPtxSize"));
  a.ptx = reinterpret_cast<CopyFn>(sym("nvJitLinkGetLinkedPtx"));
  a.version = reinterpret_cast<VersionFn>(::dlsym(h, "nvJitLinkVersion"));
  if (!a.create || !a.destroy || !a.add_data || !a.complete || !a.cubin_size || !a.cubin || !a.error_log_size ||
      !a.error_log || !a.info_log_size || !a.info_log || !a.ptx_size || !a.ptx) {
    a.failure = a.path + " lacks nvJitLink's functions (nvJitLinkCreate, ...): not a CUDA 12 or 13 nvJitLink";
    a.create = nullptr;
    return a;
  }
  unsigned major = 0, minor = 0;
  if (a.version && a.version(&major, &minor) == 0)
    a.version_text = std::to_string(major) + "." + std::to_string(minor);
  return a;
}

const Api &api() {
  static const Api a = load_api();
  return a;
}

std::string read_log(Handle h, SizeFn size_fn, CopyFn copy_fn) {
  std::size_t n = 0;
  if (size_fn(h, &n) != 0 || n == 0)
    return {};
  std::string s(n, '\0');
  if (copy_fn(h, s.data()) != 0)
    return {};
  while (!s.empty() && (s.back() == '\0' || s.back() == '\n'))
    s.pop_back();
  return s;
}

} // namespace

std::vector<std::string> candidates() {
  if (std::string only = env("HOTLINK_NVJITLINK"); !only.empty())
    return {only};
  std::vector<std::string> dirs;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string root = env(var); !root.empty())
      dirs.push_back(root + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  std::vector<std::string> files;
  for (const std::string &d : dirs)
    for (const char *so : kSonames)
      files.push_back(d + "/" + so);
  files.push_back("(the dynamic loader's path)");
  // The nvidia-nvjitlink wheel: site-packages/nvidia/nvjitlink/lib.
  std::string home = env("HOME");
  for (std::string pattern : {std::string("/usr/lib/python3/dist-packages"), std::string("/usr/local/lib/python3*/dist-packages"),
                              std::string("/usr/local/lib/python3*/site-packages"),
                              home.empty() ? std::string() : home + "/.local/lib/python3*/site-packages"}) {
    if (pattern.empty())
      continue;
    glob_t g{};
    if (::glob((pattern + "/nvidia/nvjitlink/lib/libnvJitLink.so*").c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i)
        files.push_back(g.gl_pathv[i]);
    else
      files.push_back(pattern + "/nvidia/nvjitlink/lib/libnvJitLink.so.13");
    ::globfree(&g);
  }
  return files;
}

Expected<std::string> find_library() {
  static base::Memo<int, std::string> found; // a failure is not kept: a later install is found
  return found.compute_once(0, [] () -> Expected<std::string> {
    std::vector<std::string> places = candidates();
    for (const std::string &p : places) {
      std::string file = p == "(the dynamic loader's path)" ? loader_path_file() : p;
      if (!file.empty() && is_file(file)) {
        char real[PATH_MAX];
        return std::string(::realpath(file.c_str(), real) ? real : file.c_str());
      }
    }
    std::string looked;
    for (const std::string &p : places)
      looked += (looked.empty() ? "" : ", ") + p;
    return make_error(ErrorCode::BadRequest, "NVIDIA's nvJitLink is not installed (looked in " + looked + ")",
                      {}, "--target",
                      "install the CUDA toolkit (its lib64/libnvJitLink.so) and set CUDA_HOME, or `pip install "
                      "nvidia-nvjitlink-cu13`, or set HOTLINK_NVJITLINK to the library");
  });
}

std::string version() { return api().create ? api().version_text : std::string(); }

Linked link(const std::vector<std::string> &options, const std::vector<Input> &inputs) {
  Linked out;
  const Api &a = api();
  if (!a.create) {
    out.failure = a.failure;
    return out;
  }
  std::vector<const char *> opts;
  for (const std::string &o : options)
    opts.push_back(o.c_str());
  Handle h = nullptr;
  if (int rc = a.create(&h, static_cast<std::uint32_t>(opts.size()), opts.data()); rc != 0) {
    out.failure = "nvJitLink refused its options (nvJitLinkCreate returned " + std::to_string(rc) + ")";
    if (h)
      out.error_log = read_log(h, a.error_log_size, a.error_log);
    if (h)
      a.destroy(&h);
    return out;
  }
  bool ok = true;
  for (const Input &in : inputs)
    if (a.add_data(h, input_type(in.kind), in.bytes.data(), in.bytes.size(), in.name.c_str()) != 0) {
      ok = false;
      break;
    }
  ok = ok && a.complete(h) == 0;
  out.error_log = read_log(h, a.error_log_size, a.error_log);
  out.info_log = read_log(h, a.info_log_size, a.info_log);
  std::size_t size = 0;
  bool as_ptx = std::find(options.begin(), options.end(), "-ptx") != options.end();
  if (ok && as_ptx) {
    out.ptx = read_log(h, a.ptx_size, a.ptx);
    out.ok = !out.ptx.empty();
  } else if (ok && a.cubin_size(h, &size) == 0 && size > 0) {
    out.cubin.resize(size);
    out.ok = a.cubin(h, out.cubin.data()) == 0;
  }
  a.destroy(&h);
  return out;
}

} // namespace hotlink::detail::nvjitlink
