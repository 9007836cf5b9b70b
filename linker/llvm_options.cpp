#include "linker/llvm_options.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <mutex>
#include <set>

namespace cl = llvm::cl;

namespace hotlink::detail {

namespace {

std::mutex g_declared_mu;
std::vector<std::string> g_declared_args;  // as the host spelled them
std::set<std::string> g_declared_names;    // option names they set

// The value of a scalar option as text its parser accepts.
template <class T> bool scalar_text(cl::Option *o, std::string &out) {
  auto show = [&](const T &v) {
    if constexpr (std::is_same_v<T, bool>)
      out = v ? "true" : "false";
    else if constexpr (std::is_same_v<T, std::string>)
      out = v;
    else if constexpr (std::is_same_v<T, char>)
      out = std::string(1, v);
    else if constexpr (std::is_floating_point_v<T>) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
      out = buf;
    } else
      out = std::to_string(v);
  };
  if (auto *p = dynamic_cast<cl::opt<T, false, cl::parser<T>> *>(o))
    return show(p->getValue()), true;
  if (auto *p = dynamic_cast<cl::opt<T, true, cl::parser<T>> *>(o))
    return show(p->getValue()), true;
  return false;
}

std::string option_name(const std::string &arg) {
  std::size_t b = arg.find_first_not_of('-');
  std::size_t e = arg.find('=');
  return b == std::string::npos ? std::string() : arg.substr(b, e == std::string::npos ? e : e - b);
}

// Re-applies the declared options. Called with the lld lock held.
void apply_declared() {
  std::lock_guard<std::mutex> lock(g_declared_mu);
  if (g_declared_args.empty())
    return;
  auto &opts = cl::getRegisteredOptions();
  for (const std::string &n : g_declared_names)
    if (auto it = opts.find(n); it != opts.end())
      it->second->reset();
  std::vector<const char *> argv = {"hotlink"};
  for (const std::string &a : g_declared_args)
    argv.push_back(a.c_str());
  std::string ignored;
  llvm::raw_string_ostream os(ignored);
  cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "", &os);
}

} // namespace

void SavedLLVMOptions::save() {
  scalars_.clear();
  others_.clear();
  std::set<std::string> declared;
  {
    std::lock_guard<std::mutex> lock(g_declared_mu);
    declared = g_declared_names;
  }
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *o = entry.second;
    if (o->getNumOccurrences() == 0 || dynamic_cast<cl::alias *>(o) ||
        declared.count(entry.first.str()))
      continue;
    std::string text;
    if (scalar_text<bool>(o, text) || scalar_text<int>(o, text) ||
        scalar_text<unsigned>(o, text) || scalar_text<char>(o, text) ||
        scalar_text<std::string>(o, text) || scalar_text<float>(o, text) ||
        scalar_text<double>(o, text))
      scalars_.push_back({o, std::move(text)});
    else
      others_.push_back(o);
  }
}

std::vector<std::string> SavedLLVMOptions::restore() {
  for (const Scalar &s : scalars_) {
    auto *o = static_cast<cl::Option *>(s.option);
    if (o->getNumOccurrences() == 0)
      o->addOccurrence(0, o->ArgStr, s.value);
  }
  apply_declared();
  std::vector<std::string> lost;
  for (void *p : others_) {
    auto *o = static_cast<cl::Option *>(p);
    if (o->getNumOccurrences() == 0)
      lost.push_back(o->ArgStr.str());
  }
  return lost;
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
  std::lock_guard<std::mutex> lock(g_declared_mu);
  // Options already set by an earlier declaration are re-set, not doubled.
  auto &opts = cl::getRegisteredOptions();
  for (const std::string &a : args)
    if (auto it = opts.find(option_name(a)); it != opts.end())
      it->second->reset();
  if (!cl::ParseCommandLineOptions(static_cast<int>(argv.size()), argv.data(), "", &os)) {
    os.flush();
    return make_error(ErrorCode::BadRequest, "LLVM rejected the options: " + errors,
                      {}, {}, "check the option names against `llc-22 --help-hidden`");
  }
  g_declared_args = args;
  g_declared_names.clear();
  for (const std::string &a : args)
    g_declared_names.insert(option_name(a));
  return std::nullopt;
}

} // namespace hotlink::detail
