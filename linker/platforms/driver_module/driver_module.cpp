// libhotlink-driver.so: clang's driver as a library, behind one C entry
// point (abi.h). Computes the jobs `clang ARGS` would run (nothing runs,
// no input needs to exist) and every path the driver asked the file
// system about, so that the answer can be replayed while those paths
// answer the same (driver_replay.h).
#include "linker/platforms/driver_module/abi.h"

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Driver/Compilation.h"
#include "clang/Driver/Driver.h"
#include "clang/Driver/Job.h"
#include "clang/Driver/Tool.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace hotlink::detail;

// The real file system, recording each path the driver looks at as it was
// asked (a relative one, from a relative --sysroot, is checked against the
// replaying process's directory, where it would be resolved again).
class RecordingFileSystem : public llvm::RTTIExtends<RecordingFileSystem, llvm::vfs::ProxyFileSystem> {
public:
  static const char ID;
  explicit RecordingFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs) : RTTIExtends(std::move(fs)) {}

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine &path) override {
    note(path);
    return ProxyFileSystem::status(path);
  }
  bool exists(const llvm::Twine &path) override {
    note(path);
    return ProxyFileSystem::exists(path);
  }
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>> openFileForRead(const llvm::Twine &path) override {
    note(path);
    return ProxyFileSystem::openFileForRead(path);
  }
  llvm::vfs::directory_iterator dir_begin(const llvm::Twine &dir, std::error_code &ec) override {
    note(dir);
    return ProxyFileSystem::dir_begin(dir, ec);
  }
  std::error_code getRealPath(const llvm::Twine &path, llvm::SmallVectorImpl<char> &out) override {
    note(path);
    return ProxyFileSystem::getRealPath(path, out);
  }

  std::set<std::string> paths;

private:
  void note(const llvm::Twine &path) {
    std::string p = path.str();
    if (!p.empty())
      paths.insert(std::move(p));
  }
};
const char RecordingFileSystem::ID = 0;

void add(std::string &out, char tag, llvm::StringRef text) {
  out += tag;
  out.append(text.data(), text.size());
  out += '\0';
}

char *give(const std::string &records, size_t *size) {
  char *p = static_cast<char *>(std::malloc(records.size() + 1));
  if (!p) {
    *size = 0;
    return nullptr;
  }
  std::memcpy(p, records.data(), records.size());
  p[records.size()] = '\0';
  *size = records.size();
  return p;
}

std::string jobs(const char *clang, const char *triple, const char *const *argv, size_t argc) {
  std::string records, text;
  llvm::raw_string_ostream os(text);
  clang::DiagnosticOptions options;
  auto *printer = new clang::TextDiagnosticPrinter(os, options);
  clang::DiagnosticsEngine diags(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), options, printer);
  auto fs = llvm::makeIntrusiveRefCnt<RecordingFileSystem>(llvm::vfs::createPhysicalFileSystem());
  clang::driver::Driver driver(clang, triple, diags, "hotlink", fs);
  driver.setCheckInputsExist(false);
  std::vector<const char *> args(argv, argv + argc);
  std::unique_ptr<clang::driver::Compilation> c(driver.BuildCompilation(args));
  os.flush();
  if (!c || diags.hasErrorOccurred()) {
    add(records, driver_abi::kError, text);
    return records;
  }
  for (const clang::driver::Command &cmd : c->getJobs()) {
    add(records, driver_abi::kJob, cmd.getCreator().getName());
    if (cmd.getCreator().isLinkJob())
      add(records, driver_abi::kLink, "");
    for (const char *a : cmd.getArguments())
      add(records, driver_abi::kArg, a);
  }
  for (const std::string &p : fs->paths)
    add(records, driver_abi::kProbe, p);
  return records;
}

} // namespace

extern "C" __attribute__((visibility("default"))) char *
hotlink_driver_jobs_v1(const char *clang, const char *triple, const char *const *argv, size_t argc, size_t *size) {
  return give(jobs(clang, triple, argv, argc), size);
}

extern "C" __attribute__((visibility("default"))) void hotlink_driver_free_v1(char *records) { std::free(records); }
