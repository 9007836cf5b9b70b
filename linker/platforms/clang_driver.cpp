#include "linker/platforms/clang_driver.h"
#include "base/own_module.h"

#include "linker/platforms/driver_module/abi.h"
#include "linker/platforms/driver_replay.h"
#include "linker/job.h"

#include <dlfcn.h>

#ifndef HOTLINK_CLANG_EXECUTABLE
#define HOTLINK_CLANG_EXECUTABLE "/usr/lib/llvm-22/bin/clang"
#endif
#ifndef HOTLINK_BUILD_LIBDIR
#define HOTLINK_BUILD_LIBDIR "."
#endif
#ifndef HOTLINK_INSTALL_LIBDIR
#define HOTLINK_INSTALL_LIBDIR "/usr/local/lib"
#endif

namespace hotlink::detail {

namespace {

// libhotlink-driver.so, loaded on first need (abi.h).
struct DriverModule {
  driver_abi::JobsFn jobs = nullptr;
  driver_abi::FreeFn free = nullptr;
  std::string error; // why it is not loaded
};

DriverModule load_module() {
  DriverModule m;
  auto path = find_own_module({driver_abi::kModuleFile, "HOTLINK_DRIVER_MODULE",
                               reinterpret_cast<const void *>(&driver_jobs),
                               {HOTLINK_BUILD_LIBDIR, HOTLINK_INSTALL_LIBDIR}},
                              "it");
  if (!path) {
    m.error = path.error().message + "; " + path.error().hint;
    return m;
  }
  void *handle = nullptr;
  // Its libraries register LLVM options as they load: not while lld
  // walks the option registry.
  while_lld_is_idle([&] { handle = ::dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL); });
  if (!handle) {
    const char *why = ::dlerror();
    m.error = "cannot load " + *path + ": " + (why ? why : "dlopen failed");
    return m;
  }
  m.jobs = reinterpret_cast<driver_abi::JobsFn>(::dlsym(handle, driver_abi::kJobsSymbol));
  m.free = reinterpret_cast<driver_abi::FreeFn>(::dlsym(handle, driver_abi::kFreeSymbol));
  if (!m.jobs || !m.free)
    m.error = *path + " is not this hotlink's driver module (no " + driver_abi::kJobsSymbol + ")";
  return m;
}

const DriverModule &driver_module() {
  static const DriverModule m = load_module();
  return m;
}

// Asks clang's driver itself (through the module).
Expected<DriverAnswer> ask_driver(const std::string &triple, const std::vector<std::string> &args,
                                  const std::string &flag, const std::string &hint) {
  const DriverModule &m = driver_module();
  if (!m.jobs)
    return make_error(ErrorCode::Internal, "clang's driver is needed for " + triple + " and " + m.error, {}, flag,
                      hint);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  std::size_t size = 0;
  char *records = m.jobs(HOTLINK_CLANG_EXECUTABLE, triple.c_str(), argv.data(), argv.size(), &size);
  if (!records)
    return make_error(ErrorCode::Internal, "clang's driver ran out of memory", {}, flag, hint);
  DriverAnswer answer;
  std::string error;
  bool ok = read_driver_records(records, size, answer, error);
  m.free(records);
  if (!ok)
    return make_error(ErrorCode::BadRequest, "clang's driver: " + error, {}, flag, hint);
  return answer;
}

} // namespace

Expected<std::vector<DriverJob>> driver_jobs(const std::string &triple, const std::vector<std::string> &args,
                                             const std::string &flag, const std::string &hint) {
  std::string key = driver_replay_key(HOTLINK_CLANG_EXECUTABLE, triple, args);
  if (auto jobs = replay_driver_answer(key))
    return std::move(*jobs);
  auto answer = ask_driver(triple, args, flag, hint);
  if (!answer)
    return answer.take_error();
  keep_driver_answer(key, *answer);
  return std::move(answer->jobs);
}

Expected<DriverLinkLine> driver_link_job(const std::string &triple, const std::vector<std::string> &args,
                                         const std::string &flag, const std::string &hint) {
  auto jobs = driver_jobs(triple, args, flag, hint);
  if (!jobs)
    return jobs.take_error();
  for (const DriverJob &job : *jobs) {
    if (!job.link)
      continue;
    DriverLinkLine line;
    bool after = false;
    for (std::size_t i = 0; i < job.args.size(); ++i) {
      const std::string &a = job.args[i];
      if (a == "-o" && i + 1 < job.args.size()) {
        ++i; // lld writes where hotlink says
        continue;
      }
      if (a == kDriverInputs) {
        after = true;
        continue;
      }
      (after ? line.after : line.before).push_back(a);
    }
    return line;
  }
  return make_error(ErrorCode::Internal, "clang's driver made no link job for " + triple, {}, flag, hint);
}

} // namespace hotlink::detail
