// The plain data of a link that needs no linker: a request's inputs, the
// host's triple and the versions. The runtime (libhotlink.so) builds
// requests with these and hands them to the linker it loads on first need.
#include "hotlink/link.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

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

std::string host_target() { return llvm::Triple::normalize(llvm::sys::getDefaultTargetTriple()); }

std::string version() { return HOTLINK_VERSION_STRING; }
std::string llvm_version() { return LLVM_VERSION_STRING; }

} // namespace hotlink
