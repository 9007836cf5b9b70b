#include "linker/platforms/clang_driver.h"

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Driver/Compilation.h"
#include "clang/Driver/Driver.h"
#include "clang/Driver/Job.h"
#include "clang/Driver/Tool.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

#ifndef HOTLINK_CLANG_EXECUTABLE
#define HOTLINK_CLANG_EXECUTABLE "/usr/lib/llvm-22/bin/clang"
#endif

namespace hotlink::detail {

Expected<std::vector<DriverJob>> driver_jobs(const std::string &triple, const std::vector<std::string> &args,
                                             const std::string &flag, const std::string &hint) {
  std::string text;
  llvm::raw_string_ostream os(text);
  clang::DiagnosticOptions options;
  auto *printer = new clang::TextDiagnosticPrinter(os, options);
  clang::DiagnosticsEngine diags(llvm::makeIntrusiveRefCnt<clang::DiagnosticIDs>(), options, printer);
  clang::driver::Driver driver(HOTLINK_CLANG_EXECUTABLE, triple, diags, "hotlink", llvm::vfs::getRealFileSystem());
  driver.setCheckInputsExist(false);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  std::unique_ptr<clang::driver::Compilation> c(driver.BuildCompilation(argv));
  os.flush();
  if (!c || diags.hasErrorOccurred())
    return make_error(ErrorCode::BadRequest, "clang's driver: " + text, {}, flag, hint);
  std::vector<DriverJob> jobs;
  for (const clang::driver::Command &cmd : c->getJobs()) {
    DriverJob job;
    job.tool = cmd.getCreator().getName();
    job.link = cmd.getCreator().isLinkJob();
    for (const char *a : cmd.getArguments())
      job.args.emplace_back(a);
    jobs.push_back(std::move(job));
  }
  return jobs;
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
