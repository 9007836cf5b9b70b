// bench/startup_bench's floor of a verified load, without hotlink: what any
// loader that maps a private copy (so that the file cannot change between
// its check and its mapping) does at least: read the manifest and the
// artifact, write the copy into a directory of its own, dlopen it, call.
// Exits 0 when the kernel returned 41.
//   private_copy_ref MANIFEST ARTIFACT
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

std::vector<char> read_file(const char *path) {
  std::vector<char> bytes;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0) {
    bytes.resize(std::size_t(st.st_size));
    if (::read(fd, bytes.data(), bytes.size()) != ssize_t(bytes.size()))
      bytes.clear();
  }
  if (fd >= 0)
    ::close(fd);
  return bytes;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3)
    return std::fprintf(stderr, "usage: private_copy_ref MANIFEST ARTIFACT\n"), 2;
  std::vector<char> manifest = read_file(argv[1]), artifact = read_file(argv[2]);
  char dir[] = "/tmp/hotlink-floor-XXXXXX";
  if (manifest.empty() || artifact.empty() || !::mkdtemp(dir))
    return 1;
  std::string copy = std::string(dir) + "/k.so";
  int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
  bool written = fd >= 0 && ::write(fd, artifact.data(), artifact.size()) == ssize_t(artifact.size());
  if (fd >= 0)
    ::close(fd);
  void *handle = written ? ::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  ::unlink(copy.c_str());
  ::rmdir(dir);
  auto f = handle ? reinterpret_cast<int (*)(int)>(::dlsym(handle, "f")) : nullptr;
  return f && f(20) == 41 ? 0 : 1;
}
