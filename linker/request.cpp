// The plain data of a link that needs no linker: a request's inputs, the
// host's triple and the versions. The runtime (libhotlink.so) builds
// requests with these and hands them to the linker it loads on first need.
#include "hotlink/link.h"

namespace hotlink {

Input Input::file(std::string path) {
  Input in;
  in.name = path;
  in.path = std::move(path);
  return in;
}

Input Input::memory(std::string name, std::vector<std::uint8_t> bytes) {
  Input in;
  in.name = std::move(name);
  in.bytes = std::move(bytes);
  return in;
}

Input Input::memory(std::string name, const void *data, std::size_t size) {
  const auto *p = static_cast<const std::uint8_t *>(data);
  return memory(std::move(name), std::vector<std::uint8_t>(p, p + size));
}

const char *to_string(CacheUse use) {
  switch (use) {
  case CacheUse::Off: return "off";
  case CacheUse::Hit: return "hit";
  case CacheUse::Miss: return "miss";
  case CacheUse::RemoteHit: return "remote-hit";
  }
  return "off";
}

// LLVM's name for this host (its default target triple, normalized), from
// the compiler's predefined macros, as clang derives it: the runtime names
// its host with no LLVM linked in (test/linker/service_test.cpp holds it
// to LLVM's answer).
std::string host_target() {
#if defined(__x86_64__) || defined(_M_X64)
  const std::string arch = "x86_64", pc = "pc";
#elif defined(__aarch64__) || defined(_M_ARM64)
  const std::string arch = "aarch64", pc = "unknown";
#elif defined(__i386__) || defined(_M_IX86)
  const std::string arch = "i686", pc = "pc";
#else
  const std::string arch = "unknown", pc = "unknown";
#endif
#if defined(__linux__)
  return arch + "-" + pc + "-linux-gnu";
#elif defined(_WIN32) && defined(__MINGW32__)
  return arch + "-w64-windows-gnu";
#elif defined(_WIN32)
  return arch + "-pc-windows-msvc";
#elif defined(__APPLE__)
  return (arch == "aarch64" ? std::string("arm64") : arch) + "-apple-darwin";
#else
  return arch + "-" + pc + "-unknown";
#endif
}

std::string version() { return HOTLINK_VERSION_STRING; }
// The LLVM the linker module is built with (CMake's LLVM_PACKAGE_VERSION);
// "" in a build with no LLVM (the Windows runtime).
std::string llvm_version() { return HOTLINK_LLVM_VERSION_STRING; }

} // namespace hotlink
