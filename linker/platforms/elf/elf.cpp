// The ELF platform (GNU/Linux): `clang -shared`'s runtime environment
// (runtime.h), a version script for the exports, and a user's version
// script merged into it.
#include "linker/platforms/elf/binding.h"
#include "linker/platforms/elf/needs.h"
#include "linker/platforms/elf/runtime.h"
#include "linker/platforms/table.h"
#include "base/text.h"

#include "exports/names.h"
#include "hotlink/export_policy.h"
#include "exports/version_script.h"
#include "exports/writers.h"
#include "linker/codegen.h"
#include "linker/plan.h"

#include "llvm/LTO/LTO.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <unordered_set>

namespace hotlink::detail {

std::string_view base_name(std::string_view symbol) { return symbol.substr(0, symbol.find('@')); }

SymbolScan scan_symbols(const PlanContext &ctx) {
  SymbolScan scan;
  for (const LoadedInput &l : ctx.inputs)
    for (const exports::Symbol &s : l.info.symbols) {
      if (s.defined) {
        scan.versioned_definition |= s.name.find('@') != std::string::npos;
        continue;
      }
      std::string_view name = base_name(s.name);
      scan.undefined.insert(name);
      scan.cxx_reference |= is_cxx_runtime_symbol(name);
      auto first = [&](std::string_view &slot, std::string_view prefix) {
        if (slot.empty() && name.substr(0, prefix.size()) == prefix)
          slot = name;
      };
      switch (name.empty() ? 0 : name[0]) { // most names start with none of these
      case '_': first(scan.kmpc, "__kmpc_"); first(scan.gfortran, "_gfortran_"); break;
      case 'G': first(scan.gomp, "GOMP_"); break;
      case 'o': first(scan.omp_api, "omp_"); break;
      default: break;
      }
    }
  return scan;
}

CxxLibrary cxx_library(const PlanContext &ctx, const SymbolScan &scan) {
  switch (ctx.request.cxx_runtime) {
  case CxxRuntime::Libstdcxx: return CxxLibrary::Libstdcxx;
  case CxxRuntime::Libcxx: return CxxLibrary::Libcxx;
  case CxxRuntime::None: return CxxLibrary::None;
  case CxxRuntime::Auto: break;
  }
  if (!scan.cxx_reference)
    return CxxLibrary::None;
  // A C++ name another input defines is not the runtime's.
  std::unordered_set<std::string_view> defined = ctx.defined_names();
  for (std::string_view n : scan.undefined)
    if (is_cxx_runtime_symbol(n) && !defined.count(n))
      return CxxLibrary::Libstdcxx;
  return CxxLibrary::None;
}

namespace {

// The end of LinkResult::export_file when lld got no script.
constexpr const char *kScriptNotPassed = "# not passed to lld, which exports just these names without it\n";

class ElfLink final : public PlatformLink {
public:
  std::optional<Error> check_request(const PlanContext &ctx) override {
    if (auto err = refuse_other_options(ctx, kElfOptions | kDriverRuntime))
      return err;
    const LinkRequest &req = ctx.request;
    for (char c : req.elf.soname)
      if (static_cast<unsigned char>(c) < 0x20 || c == '/')
        return make_error(ErrorCode::BadRequest, "a soname is a file name: no '/' or control characters",
                          req.elf.soname, "--soname", "pass a name like libfoo.so.1");
    if (!req.elf.version_script.empty() && !llvm::sys::fs::is_regular_file(req.elf.version_script))
      return make_error(ErrorCode::InputNotFound, "the version script cannot be read", req.elf.version_script,
                        "--version-script", "check the path");
    return std::nullopt;
  }

  std::optional<Error> merge_exports(PlanContext &ctx) override { return merge_version_script(ctx); }

  std::optional<Error> environment(PlanContext &ctx) override {
    SymbolScan scan = scan_symbols(ctx);
    std::unordered_set<std::string_view> &names = scan.undefined;
    if (ctx.any_bitcode) {
      // LTO code generation may call runtime functions the bitcode does not
      // name (memcpy, __udivti3, ...): the stubs hold them all.
      llvm::Triple triple(ctx.target().triple);
      for (const char *n : llvm::lto::LTO::getRuntimeLibcallSymbols(triple))
        names.insert(n);
    }
    const LinkRequest &req = ctx.request;
    if (req.runtime == Runtime::None) {
      warn_bare(ctx, nullptr);
      return std::nullopt;
    }
    auto needs = runtime_needs(ctx, scan);
    if (!needs)
      return needs.take_error();
    if (!needs->env->has_libc) {
      warn_bare(ctx, needs->env.get());
      return std::nullopt;
    }
    // The stubs hold what hotlink can see the link naming; libraries,
    // search paths and raw flags of the user's can name more.
    RuntimeChoice choice;
    choice.exact = !req.elf.runtime_stubs || !req.libraries.empty() || !req.library_paths.empty() ||
                   !req.extra_flags.empty() || ctx.any_shared || scan.versioned_definition;
    choice.startup_objects = req.elf.startup_objects == StartupObjects::Always || ctx.any_bitcode ||
                             names.count("__gmon_start__") || names.count("mcount") || names.count("__fentry__");
    for (const LoadedInput &l : ctx.inputs)
      choice.startup_objects |= l.info.startup_sections;
    env_ = needs->env;
    runtime_ = runtime_link(*env_, names, choice);
    ctx.plan.keep_alive = runtime_;
    ctx.plan.runtime = runtime_->used;
    ctx.plan.runtime_added = std::move(needs->added);
    ctx.plan.diagnostics.insert(ctx.plan.diagnostics.end(), needs->warnings.begin(), needs->warnings.end());
    homes_ = std::move(needs->homes);
    // lld names a C++ symbol demangled in its errors: the hint finds it so too.
    for (const auto &[name, home] : std::map<std::string, LibraryHome>(homes_.begin(), homes_.end()))
      homes_.emplace(exports::demangle(name), home);
    ctx.plan.fingerprints.insert(ctx.plan.fingerprints.end(), env_->fingerprints.begin(), env_->fingerprints.end());
    return std::nullopt;
  }

  void head(PlanContext &ctx, const std::string &out_name) override {
    const LinkRequest &req = ctx.request;
    std::vector<Arg> &a = ctx.job().args;
    if (env_) {
      // The driver's line up to the inputs: its flags (-shared, -m,
      // --hash-style, --build-id, --eh-frame-hdr, --sysroot) and the
      // startup objects.
      a.insert(a.end(), runtime_->before.begin(), runtime_->before.end());
    } else {
      a.push_back(plain("-shared"));
      a.push_back(plain(ctx.target().arch == exports::Arch::AArch64 ? "-maarch64linux" : "-melf_x86_64"));
      a.push_back(plain("--hash-style=gnu"));
      a.push_back(plain("--build-id"));
      a.push_back(plain("--eh-frame-hdr"));
      if (!req.sysroot.empty())
        a.push_back(plain("--sysroot=" + req.sysroot));
    }
    const std::string threads = std::to_string(req.threads);
    a.push_back(keyed("--threads=" + threads, "<threads>"));
    if (ctx.any_bitcode)
      a.push_back(keyed("--thinlto-jobs=" + threads, "<threads>"));
    a.push_back(plain("-soname=" + (req.elf.soname.empty() ? out_name : req.elf.soname)));
    a.push_back(plain("-o"));
    a.push_back(in_dir("", out_name));
    if (req.undefined == Undefined::Error)
      a.push_back(plain("-zdefs"));
    if (req.elf.symbolic)
      a.push_back(plain("-Bsymbolic-non-weak"));
  }

  std::optional<Error> export_file(PlanContext &ctx) override {
    Plan &plan = ctx.plan;
    std::vector<Arg> &a = ctx.job().args;
    if (ctx.export_list) {
      const std::vector<exports::Export> &named = has_user_script_ ? anonymous_exports_ : plan.exports;
      bool versioned = std::any_of(named.begin(), named.end(),
                                   [](const exports::Export &e) { return e.symbol.find('@') != std::string::npos; });
      auto script = exports::write_version_script(versioned ? unversioned(named) : named);
      if (!script)
        return script.take_error();
      plan.export_file = script.value();
      if (lld_exports_just_these(ctx)) {
        plan.export_file += kScriptNotPassed; // appended: the script has room, a copy would fault
      } else {
        ctx.add_file("exports.ver", plan.export_file);
        a.push_back(in_dir("--version-script=", "exports.ver"));
      }
      // Archive members are linked for what is named: the exports are.
      if (ctx.any_archive && !ctx.policy_takes_whole_archives())
        for (const exports::Export &e : plan.exports)
          a.push_back(plain("--undefined=" + e.symbol));
    }
    if (has_user_script_) {
      ctx.add_file("user.ver", user_script_);
      a.push_back(in_dir("--version-script=", "user.ver"));
      plan.export_file += "# merged with " + ctx.request.elf.version_script + ":\n" + user_script_;
    }
    return dynamic_list(ctx);
  }

  bool revise_after_failure(Plan &plan, const std::vector<Diagnostic> &lld_said,
                            std::vector<Diagnostic> &changes) override {
    return bind_position_dependent_data(binding_, plan, lld_said, changes);
  }

  std::vector<std::string> library_files(const std::string &name) const override {
    return {"lib" + name + ".so", "lib" + name + ".a"};
  }

  // ld.lld embeds no input or output path in an ELF image.
  bool links_in_memory() const override { return true; }

  std::optional<Error> runtime_libraries(PlanContext &ctx) override {
    if (!env_)
      return std::nullopt;
    Job &job = ctx.job();
    job.args.insert(job.args.end(), runtime_->after.begin(), runtime_->after.end());
    for (const JobFile &f : runtime_->files) {
      job.files.push_back(JobFile::borrow(f.name, f.bytes()));
      job.files.back().keyed = false;
    }
    for (auto &d : runtime_->display_names)
      job.display_names.push_back(d);
    return std::nullopt;
  }

  std::string undefined_hint(const LinkRequest &, const std::string &symbol) const override {
    auto home = homes_.find(symbol);
    if (home != homes_.end())
      return home->second.path + " defines it: add -l " + home->second.name;
    return "add the object or library that defines it (-l NAME, -L DIR); an ELF shared object "
           "may also leave it to the loader (drop --no-undefined), and a hidden symbol must be "
           "defined inside the artifact";
  }

private:
  // The exports a script names: a .symver definition (foo@v1, foo@@v2) is
  // exported by its version whatever a script says, as ld.lld does, and a
  // script naming it would fail ("symbol not defined").
  static std::vector<exports::Export> unversioned(const std::vector<exports::Export> &all) {
    std::vector<exports::Export> out;
    out.reserve(all.size());
    for (const exports::Export &e : all)
      if (e.symbol.find('@') == std::string::npos)
        out.push_back(e);
    return out;
  }

  // Whether lld, given no version script, would export exactly the
  // policy's names: it exports every visible definition of a shared link.
  // Then the script of 10^5 names would only cost lld's lexer and matcher
  // (half of lld's instructions for 100,000 exports) and change no byte of
  // the image. So when the policy takes every visible definition of the
  // inputs (as many exports as definitions: a name defined twice keeps
  // the script), nothing else brings definitions (runtime objects and
  // archives, the user's libraries and flags), and lld decides nothing
  // else by the script (symbol versions, LTO's internalizing).
  bool lld_exports_just_these(const PlanContext &ctx) const {
    const LinkRequest &req = ctx.request;
    if (has_user_script_ || ctx.any_bitcode || ctx.any_shared || !req.libraries.empty() || !req.extra_flags.empty() ||
        (runtime_ && runtime_->adds_objects))
      return false;
    std::size_t definitions = 0;
    for (const LoadedInput &l : ctx.inputs)
      for (const exports::Symbol &s : l.info.symbols) {
        if (s.name.find('@') != std::string::npos)
          return false; // .symver names
        definitions += s.defined && !s.hidden;
      }
    return definitions == ctx.plan.exports.size();
  }

  // Exported variables (and weak definitions) stay preemptible under
  // -Bsymbolic-non-weak (binding.h).
  std::optional<Error> dynamic_list(PlanContext &ctx) {
    if (!ctx.request.elf.symbolic)
      return std::nullopt;
    binding_ = plan_binding(ctx);
    if (binding_.preemptible.empty())
      return std::nullopt;
    auto list = exports::write_dynamic_list(binding_.preemptible);
    if (!list)
      return list.take_error();
    ctx.add_file(kDynamicList, *list);
    ctx.job().args.push_back(in_dir("--dynamic-list=", kDynamicList));
    return std::nullopt;
  }

  // A user's version script: its nodes claim some names (exported with
  // their versions, by the script itself); the policy's other exports go
  // into hotlink's anonymous node, which also makes everything else local.
  std::optional<Error> merge_version_script(PlanContext &ctx) {
    const std::string &path = ctx.request.elf.version_script;
    if (path.empty())
      return std::nullopt;
    auto text = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!text)
      return make_error(ErrorCode::InputNotFound, "cannot read: " + text.getError().message(), path,
                        "--version-script", "check the path");
    user_script_ = (*text)->getBuffer().str();
    auto nodes = exports::parse_version_script(user_script_, path);
    if (!nodes)
      return nodes.take_error();
    std::vector<exports::Export> &exported_list = ctx.plan.exports;
    std::unordered_set<std::string> exported;
    std::vector<exports::Export> unclaimed;
    for (const exports::Export &e : exported_list) {
      exported.insert(e.symbol);
      if (!exports::claiming_node(*nodes, e.symbol, exports::demangle(e.symbol)) &&
          !exports::names_local(*nodes, e.symbol))
        unclaimed.push_back(e);
    }
    std::vector<exports::Export> claimed_extra;
    for (const LoadedInput &l : ctx.inputs)
      for (const exports::Symbol &s : l.info.symbols)
        if (s.defined && !s.hidden && !exported.count(s.name) &&
            exports::claiming_node(*nodes, s.name, exports::demangle(s.name))) {
          exported.insert(s.name);
          claimed_extra.push_back({s.name, s.name, s.data});
        }
    anonymous_exports_ = std::move(unclaimed);
    exported_list.insert(exported_list.end(), claimed_extra.begin(), claimed_extra.end());
    std::sort(exported_list.begin(), exported_list.end(),
              [](const exports::Export &a, const exports::Export &b) { return a.name < b.name; });
    has_user_script_ = true;
    return std::nullopt;
  }

  // A link without a C library: references to C library functions bind
  // at load time to whatever the process has, without symbol versions.
  void warn_bare(PlanContext &ctx, const RuntimeEnvironment *env) {
    std::unordered_set<std::string_view> defined = ctx.defined_names();
    std::vector<std::string> named;
    for (const LoadedInput &l : ctx.inputs)
      for (const exports::Symbol &s : l.info.symbols)
        if (!s.defined && !s.weak && !defined.count(s.name))
          named.push_back(std::string(base_name(s.name)));
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    if (named.empty())
      return;
    std::string list = base::list_some(named, 12);
    std::string why = env ? env->missing + "; " : "";
    std::string fix = ctx.request.runtime == Runtime::None
                          ? "drop --no-default-libs to link the target's C library"
                          : "install the target's C library (for aarch64-linux-gnu: Debian libc6-dev-arm64-cross "
                            "libgcc-12-dev-arm64-cross) or give its root with --sysroot";
    ctx.plan.diagnostics.push_back(Diagnostic{
        Severity::Warning,
        why + "linked without a C library: " + list + (named.size() == 1 ? " is" : " are") +
            " left to the loading process and bind without symbol versions (glibc then gives the oldest "
            "version of each function, which can behave differently); " + fix,
        {}, named.front()});
  }

  std::shared_ptr<const RuntimeEnvironment> env_;
  std::shared_ptr<const RuntimeLink> runtime_;
  bool has_user_script_ = false;
  std::string user_script_;
  std::vector<exports::Export> anonymous_exports_;
  Binding binding_;
  std::map<std::string, LibraryHome, std::less<>> homes_; // of undefined names
};

bool serves(const llvm::Triple &t, TargetInfo &info) {
  info.arch = arch_of(t);
  if (!t.isOSLinux() || (info.arch != exports::Arch::X86_64 && info.arch != exports::Arch::AArch64))
    return false;
  info.format = exports::Format::ELF;
  info.flavor = "ld.lld";
  info.extension = ".so";
  return true;
}

std::unique_ptr<PlatformLink> start(const TargetInfo &, const LinkRequest &) { return std::make_unique<ElfLink>(); }

// One function calling the host, as a JIT's smallest kernel: the link
// also lists the library directories for what it leaves undefined.
std::vector<std::uint8_t> warm_up_object(const TargetInfo &target) {
  const char *call = target.arch == exports::Arch::AArch64 ? "  b hotlink_warm_up_host\n"
                                                            : "  jmp hotlink_warm_up_host@PLT\n";
  auto obj = assemble(target.triple, std::string(".text\n.globl hotlink_warm_up\n"
                                                 ".type hotlink_warm_up,@function\nhotlink_warm_up:\n") +
                                         call + ".section .note.GNU-stack,\"\",@progbits\n");
  return obj ? std::move(obj.value()) : std::vector<std::uint8_t>();
}

} // namespace

const Platform &elf_platform() {
  static const Platform p{"elf", {"x86_64-linux-gnu", "aarch64-linux-gnu"}, serves, start, warm_up_object};
  return p;
}

} // namespace hotlink::detail
