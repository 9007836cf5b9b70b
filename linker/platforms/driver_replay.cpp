#include "linker/platforms/driver_replay.h"
#include "linker/platforms/driver_module/abi.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::detail {

namespace {

constexpr char kVersion = 'V', kKey = 'K', kState = 'S', kEnd = 'Z';
constexpr const char *kFormat = "hotlink driver replay 1";
constexpr char kSeparator = '\x1f';

std::string replay_dir() {
  if (const char *d = std::getenv("HOTLINK_DRIVER_REPLAYS"); d && *d)
    return std::strcmp(d, "off") == 0 ? std::string() : std::string(d);
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return std::string(x) + "/hotlink/driver";
  if (const char *h = std::getenv("HOME"); h && *h == '/')
    return std::string(h) + "/.cache/hotlink/driver";
  return {};
}

std::string replay_path(const std::string &dir, const std::string &key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.replay",
                static_cast<unsigned long long>(llvm::xxh3_64bits(llvm::StringRef(key))));
  return dir + "/" + name;
}

// What a path is now, as the driver would see it through stat().
std::string path_state(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "-" : "? " + std::to_string(errno);
  char kind = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 'o';
  return std::string(1, kind) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_dev);
}

void add(std::string &out, char tag, const std::string &text) {
  out += tag;
  out += text;
  out += '\0';
}

} // namespace

bool read_driver_records(const char *data, std::size_t size, DriverAnswer &answer, std::string &error) {
  const char *p = data, *end = data + size;
  while (p < end) {
    const char *nul = static_cast<const char *>(std::memchr(p, '\0', end - p));
    if (!nul || nul == p) {
      error = "malformed records";
      return false;
    }
    char tag = *p;
    std::string text(p + 1, nul);
    p = nul + 1;
    switch (tag) {
    case driver_abi::kError: error = text; return false;
    case driver_abi::kJob: answer.jobs.push_back({text, false, {}}); break;
    case driver_abi::kProbe: answer.probes.push_back(text); break;
    case driver_abi::kLink:
    case driver_abi::kArg:
      if (answer.jobs.empty()) {
        error = "malformed records";
        return false;
      }
      if (tag == driver_abi::kLink)
        answer.jobs.back().link = true;
      else
        answer.jobs.back().args.push_back(std::move(text));
      break;
    default: error = "malformed records"; return false;
    }
  }
  return true;
}

std::string driver_replay_key(const std::string &clang, const std::string &triple,
                              const std::vector<std::string> &args) {
  std::string key = std::string(kFormat) + kSeparator + LLVM_VERSION_STRING + kSeparator + clang + kSeparator +
                    path_state(clang) + kSeparator + triple;
  for (const std::string &a : args)
    key += kSeparator + a;
  // What clang's driver reads from the environment for a link line.
  for (const char *var : {"COMPILER_PATH", "LIBRARY_PATH", "CLANG_NO_DEFAULT_CONFIG", "GCC_EXEC_PREFIX"}) {
    const char *v = std::getenv(var);
    key += kSeparator + std::string(var) + "=" + (v ? v : "(unset)");
  }
  return key;
}

std::optional<std::vector<DriverJob>> replay_driver_answer(const std::string &key) {
  std::string dir = replay_dir();
  if (dir.empty())
    return std::nullopt;
  auto buf = llvm::MemoryBuffer::getFile(replay_path(dir, key), /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return std::nullopt;
  // V, K, the paths' states, the answer's records, Z.
  llvm::StringRef bytes = (*buf)->getBuffer();
  std::string head = std::string(1, kVersion) + kFormat + '\0' + kKey + key + '\0';
  std::string tail = std::string(1, kEnd) + '\0';
  if (!bytes.starts_with(head) || !bytes.ends_with(tail))
    return std::nullopt;
  bytes = bytes.drop_front(head.size()).drop_back(tail.size());
  while (bytes.starts_with(std::string(1, kState))) {
    std::size_t nul = bytes.find('\0'), sep = bytes.find(kSeparator);
    if (nul == llvm::StringRef::npos || sep == llvm::StringRef::npos || sep > nul)
      return std::nullopt;
    std::string state = bytes.slice(1, sep).str(), path = bytes.slice(sep + 1, nul).str();
    if (path_state(path) != state)
      return std::nullopt; // the file system changed under the answer
    bytes = bytes.drop_front(nul + 1);
  }
  DriverAnswer answer;
  std::string error;
  if (!read_driver_records(bytes.data(), bytes.size(), answer, error) || answer.jobs.empty())
    return std::nullopt;
  return std::move(answer.jobs);
}

void keep_driver_answer(const std::string &key, const DriverAnswer &answer) {
  std::string dir = replay_dir();
  if (dir.empty() || llvm::sys::fs::create_directories(dir))
    return;
  std::string body = std::string(1, kVersion) + kFormat + '\0' + kKey + key + '\0';
  for (const std::string &p : answer.probes) {
    if (p.find(kSeparator) != std::string::npos)
      return; // a path the file's format cannot hold: nothing kept
    body += kState + path_state(p) + kSeparator + p + '\0';
  }
  for (const DriverJob &job : answer.jobs) {
    add(body, driver_abi::kJob, job.tool);
    if (job.link)
      add(body, driver_abi::kLink, "");
    for (const std::string &a : job.args)
      add(body, driver_abi::kArg, a);
  }
  add(body, kEnd, "");
  std::string path = replay_path(dir, key);
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  bool ok = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0)
    ::unlink(tmp.c_str());
}

} // namespace hotlink::detail
