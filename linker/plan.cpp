// Planning a link: a short pipeline of named steps over one PlanContext,
// in the order lld's LinkerDriver::link reads: the target, the request's
// options, the inputs, the exports, the runtime environment, then lld's
// arguments. What a step needs to know about the target it asks the
// target's platform (linker/platforms/platform.h).
#include "linker/plan.h"

#include "base/clock.h"
#include "hotlink/symbols.h"
#include "linker/inputs.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cctype>

namespace hotlink::detail {

namespace {

#define HOTLINK_STEP(step)                                                                         \
  if (auto err = (step))                                                                           \
    return std::move(*err);

bool is_dir(const std::string &p) { return llvm::sys::fs::is_directory(p); }

// A file name for an in-memory input inside the scratch directory: unique by
// index, readable in lld's messages, and free of path syntax.
std::string scratch_name(std::size_t index, const std::string &name) {
  std::string base = llvm::sys::path::filename(name).str();
  std::string clean;
  for (char c : base.substr(0, 64))
    clean += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return "in" + std::to_string(index) + "-" + (clean.empty() ? "input" : clean);
}

// --- 1. The target and the request's own options ---------------------------

std::optional<Error> resolve(PlanContext &ctx) {
  auto target = resolve_target(ctx.request.target);
  if (!target)
    return target.take_error();
  ctx.plan.target = *target;
  ctx.plan.platform = target->platform->start(ctx.plan.target, ctx.request);
  return std::nullopt;
}

// What every platform requires of a request.
std::optional<Error> check_request(PlanContext &ctx) {
  const LinkRequest &req = ctx.request;
  if (req.inputs.empty())
    return make_error(ErrorCode::BadRequest, "the link has no inputs", {}, {}, "pass at least one object file");
  if (req.threads == 0)
    return make_error(ErrorCode::BadRequest, "threads must be at least 1", {}, "--threads");
  for (const std::string &f : req.extra_flags)
    if (f.find("mllvm") != std::string::npos || f.find("plugin-opt") != std::string::npos)
      ctx.plan.needs_worker = true; // a bad value exits the process
  for (const std::string &lib : req.libraries)
    if (lib.empty())
      return make_error(ErrorCode::BadRequest, "a library name is empty", {}, "-l",
                        "name a library (-l m for libm) or drop the empty -l");
  for (const Input &in : req.inputs)
    if (in.path.empty() && in.name.empty() && in.bytes.empty()) // Input::file("")
      return make_error(ErrorCode::BadRequest, "an input file's path is empty", {}, {},
                        "pass the path of an object file or archive");
  for (const std::string &p : req.library_paths)
    if (!is_dir(p))
      return make_error(ErrorCode::BadRequest, "library path is not a directory", p, "-L",
                        "pass an existing directory");
  if (!req.sysroot.empty() && !is_dir(req.sysroot))
    return make_error(ErrorCode::BadRequest, "sysroot is not a directory", req.sysroot, "--sysroot",
                      "pass an existing directory");
  return ctx.plan.platform->check_request(ctx);
}

// --- 2. Exports ----------------------------------------------------------------

// Whether the artifact gets an export list (the platform selects it).
void export_list(PlanContext &ctx) {
  ctx.export_list = ctx.request.exports.mode != exports::ExportPolicy::Mode::None;
}

// --- 3. lld's arguments --------------------------------------------------------

void head(PlanContext &ctx) {
  Job &job = ctx.job();
  job.flavor = ctx.target().flavor;
  std::string out_name;
  if (!ctx.request.output_path.empty())
    out_name = llvm::sys::path::filename(ctx.request.output_path).str();
  if (out_name.empty())
    out_name = "hotlink" + ctx.target().extension;
  job.output_name = out_name;
  job.in_memory = ctx.plan.platform->links_in_memory();
  // The user's -L first, as clang's driver puts them: lld searches the
  // folders in the order given, whatever their place among the inputs, so
  // the platform's own (the system's) come after them.
  for (const std::string &p : ctx.request.library_paths)
    job.args.push_back(ctx.plan.platform->library_path(p));
  ctx.plan.platform->head(ctx, out_name);
}

// Archives linked whole: when the policy takes every member and the
// platform links archives so.
bool whole_archives(const PlanContext &ctx) {
  return ctx.policy_takes_whole_archives() && ctx.plan.platform->links_whole_archives();
}

// The inputs in order; in-memory ones (and rewritten archives) become
// scratch files. The key sees each input as its bytes, never its name.
void inputs(PlanContext &ctx) {
  Job &job = ctx.job();
  const PlatformLink &platform = *ctx.plan.platform;
  std::vector<Arg> &a = job.args;
  bool whole = whole_archives(ctx);
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    LoadedInput &l = ctx.inputs[i];
    std::string key = "<input " + std::to_string(i) + ">";
    for (const std::string &m : l.excluded)
      key += " -" + m;
    if (l.archive() && whole)
      for (Arg &w : platform.whole_archive_begin())
        a.push_back(std::move(w));
    if (!l.filtered.empty() || l.input->in_memory() || l.streamed) {
      std::string n = scratch_name(i, l.display);
      const auto *bytes = static_cast<const std::uint8_t *>(l.data);
      job.files.push_back(!l.filtered.empty() ? JobFile::own(n, std::move(l.filtered))
                          : l.streamed        ? JobFile::own(n, std::vector<std::uint8_t>(bytes, bytes + l.size))
                                              : JobFile::borrow(n, l.input->bytes));
      job.files.back().keyed = false;
      a.push_back(Arg{{}, true, n, key});
      job.display_names.emplace_back(n, l.display);
    } else if (l.shared()) {
      // As given, as ld.lld records a shared library without a soname:
      // the path is then in the image, so in the key too.
      a.push_back(keyed(l.input->path, key + " " + l.input->path));
      job.display_names.emplace_back(l.input->path, l.display);
    } else {
      a.push_back(keyed(l.path, key));
      job.display_names.emplace_back(l.path, l.display);
    }
    if (l.archive() && whole)
      for (Arg &w : platform.whole_archive_end())
        a.push_back(std::move(w));
    if (ctx.digest)
      ctx.plan.input_digests.push_back(cache::KeyBuilder::digest(l.data, l.size));
  }
}

// The user's -l libraries, then the runtime environment's, as a driver
// orders them.
std::optional<Error> libraries(PlanContext &ctx) {
  for (const std::string &lib : ctx.request.libraries) {
    if (lib.find('/') != std::string::npos) {
      ctx.job().args.push_back(plain(lib));
      if (ctx.digest)
        ctx.fingerprint_file("library " + lib, lib);
      continue;
    }
    auto arg = ctx.plan.platform->library(ctx, lib);
    if (!arg)
      return arg.take_error();
    ctx.job().args.push_back(std::move(arg.value()));
  }
  return ctx.plan.platform->runtime_libraries(ctx);
}

void extra_flags(PlanContext &ctx) {
  for (const std::string &f : ctx.request.extra_flags)
    ctx.job().args.push_back(plain(f));
}

Expected<Plan> run(const LinkRequest &req, Timings &timings, bool digest) {
  Plan plan;
  PlanContext ctx(req, plan, digest);
  auto t0 = base::Clock::now();
  HOTLINK_STEP(resolve(ctx));
  HOTLINK_STEP(check_request(ctx));
  HOTLINK_STEP(read_inputs(ctx));
  HOTLINK_STEP(check_inputs(ctx));
  PlatformLink &platform = *plan.platform;
  HOTLINK_STEP(platform.check_inputs(ctx));
  HOTLINK_STEP(exclude_members(ctx));
  export_list(ctx);
  HOTLINK_STEP(check_excluded(ctx, platform.select_exports(ctx)));
  HOTLINK_STEP(platform.merge_exports(ctx));
  HOTLINK_STEP(platform.environment(ctx));
  timings.validate_ms = base::ms_since(t0);
  auto t1 = base::Clock::now();
  head(ctx);
  HOTLINK_STEP(platform.export_file(ctx));
  inputs(ctx);
  HOTLINK_STEP(platform.support_objects(ctx));
  HOTLINK_STEP(libraries(ctx));
  extra_flags(ctx);
  timings.prepare_ms = base::ms_since(t1);
  return plan;
}

#undef HOTLINK_STEP

} // namespace

Expected<Plan> plan_link(const LinkRequest &req, Timings &timings, bool digest_inputs) {
  return run(req, timings, digest_inputs);
}

} // namespace hotlink::detail
