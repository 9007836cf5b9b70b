#include "linker/target.h"

#include "linker/linker.h"

#include "llvm/TargetParser/Host.h"
#include <map>
#include <mutex>
#include "llvm/TargetParser/Triple.h"

namespace hotlink {

std::string host_target() {
  return llvm::Triple::normalize(llvm::sys::getDefaultTargetTriple());
}

std::vector<std::string> supported_targets() {
  return {"x86_64-linux-gnu",       "aarch64-linux-gnu",
          "x86_64-pc-windows-msvc", "i686-pc-windows-msvc",
          "aarch64-pc-windows-msvc", "x86_64-w64-mingw32",
          "i686-w64-mingw32",       "aarch64-w64-mingw32",
          "x86_64-apple-macos",
          "arm64-apple-macos",      "wasm32-unknown-unknown"};
}

namespace detail {

using exports::Arch;
using exports::Format;

namespace {

Expected<TargetInfo> resolve_uncached(const std::string &spelled);

} // namespace

// Memoized: a JIT names the same one or two triples in every request.
Expected<TargetInfo> resolve_target(const std::string &spelled) {
  static std::mutex mu;
  static std::map<std::string, TargetInfo> known;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = known.find(spelled);
    if (it != known.end())
      return it->second;
  }
  auto info = resolve_uncached(spelled);
  if (info) {
    std::lock_guard<std::mutex> lock(mu);
    if (known.size() < 64)
      known.emplace(spelled, info.value());
  }
  return info;
}

namespace {

Expected<TargetInfo> resolve_uncached(const std::string &spelled) {
  std::string s = spelled.empty() ? host_target() : spelled;
  llvm::Triple t(llvm::Triple::normalize(s));
  TargetInfo info;
  info.triple = t.str();
  switch (t.getArch()) {
  case llvm::Triple::x86_64: info.arch = Arch::X86_64; break;
  case llvm::Triple::x86: info.arch = Arch::X86; break;
  case llvm::Triple::aarch64: info.arch = Arch::AArch64; break;
  case llvm::Triple::wasm32: info.arch = Arch::Wasm32; break;
  default: break;
  }
  if (info.arch == Arch::Wasm32) {
    info.format = Format::Wasm;
    info.flavor = "wasm-ld";
    info.extension = ".wasm";
  } else if (t.isOSLinux() && info.arch != Arch::X86 &&
             info.arch != Arch::Unknown) {
    info.format = Format::ELF;
    info.flavor = "ld.lld";
    info.extension = ".so";
  } else if (t.isOSWindows() && t.isWindowsMSVCEnvironment() &&
             info.arch != Arch::Unknown) {
    info.format = Format::COFF;
    info.flavor = "lld-link";
    info.extension = ".dll";
  } else if (t.isOSWindows() && t.isWindowsGNUEnvironment() &&
             info.arch != Arch::Unknown) {
    info.format = Format::COFF;
    info.flavor = "ld.lld"; // with -m i386pep: lld's MinGW driver
    info.extension = ".dll";
    info.mingw = true;
  } else if (t.isMacOSX() &&
             (info.arch == Arch::X86_64 || info.arch == Arch::AArch64)) {
    info.format = Format::MachO;
    info.flavor = "ld64.lld";
    info.extension = ".dylib";
  }
  if (info.format == Format::Unknown) {
    std::string list;
    for (const std::string &x : supported_targets())
      list += (list.empty() ? "" : ", ") + x;
    return make_error(ErrorCode::BadRequest,
                      "unsupported target '" + s + "'", {}, "--target",
                      "use one of: " + list);
  }
  return info;
}

} // namespace
} // namespace detail
} // namespace hotlink
