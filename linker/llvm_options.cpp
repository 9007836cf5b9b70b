#include "linker/llvm_options.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>

namespace cl = llvm::cl;

namespace hotlink::detail {

namespace {
// While lld runs, the registry holds lld's options (an AMDGPU link's
// -plugin-opt=mcpu=...) and not the host's, which are taken out: a planner
// on another thread asking whether the host set options gets the answer of
// the moment the link started instead of walking a registry lld is
// changing.
std::mutex g_registry_mu;
bool g_lld_running = false;
bool g_host_set_when_lld_started = false;
} // namespace

void SavedLLVMOptions::save() {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  held_.clear();
  for (auto &entry : cl::getRegisteredOptions())
    if (entry.second->getNumOccurrences() != 0)
      held_.push_back(entry.second);
  for (void *p : held_)
    static_cast<cl::Option *>(p)->removeArgument();
  g_lld_running = true;
  g_host_set_when_lld_started = !held_.empty();
}

void SavedLLVMOptions::restore(bool lld_set_options) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  // What lld itself set (-mllvm, -plugin-opt=..., an AMDGPU link's
  // -plugin-opt=mcpu=...) goes back to its default first: left
  // set, it would count as the host's at the next link, be taken out of
  // the registry and refused there as unknown.
  if (lld_set_options)
    for (auto &entry : cl::getRegisteredOptions())
      if (entry.second->getNumOccurrences() != 0)
        entry.second->reset();
  for (void *p : held_)
    static_cast<cl::Option *>(p)->addArgument();
  held_.clear();
  g_lld_running = false;
}

bool host_llvm_options_set() {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  if (g_lld_running)
    return g_host_set_when_lld_started;
  for (auto &entry : cl::getRegisteredOptions())
    if (entry.second->getNumOccurrences() != 0)
      return true;
  return false;
}

std::optional<Error> set_declared_llvm_options(const std::vector<std::string> &args) {
  std::vector<const char *> argv = {"hotlink"};
  for (const std::string &a : args) {
    if (a.empty() || a[0] != '-')
      return make_error(ErrorCode::BadRequest, "is not an LLVM option", {}, a,
                        "spell options as on a command line, e.g. -x86-asm-syntax=intel");
    argv.push_back(a.c_str());
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  // An option set by an earlier call is set again, not counted twice.
  auto &opts = cl::getRegisteredOptions();
  for (const std::string &a : args) {
    std::size_t b = a.find_first_not_of('-'), e = a.find('=');
    std::string name = b == std::string::npos ? std::string() : a.substr(b, e == std::string::npos ? e : e - b);
    if (auto it = opts.find(name); it != opts.end())
      it->second->reset();
  }
  if (!cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "", &os)) {
    os.flush();
    return make_error(ErrorCode::BadRequest, "LLVM rejected the options: " + errors, {}, {},
                      "check the option names against `llc-22 --help-hidden`");
  }
  return std::nullopt;
}

} // namespace hotlink::detail
