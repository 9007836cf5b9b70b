#include "linker/platforms/coff/coff_link.h"

#include "exports/writers.h"
#include "linker/plan.h"
#include "linker/platforms/coff/support.h"
#include "linker/platforms/coff/sysroot.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <unordered_set>

namespace hotlink::detail {

std::string library_name(const std::string &file) {
  std::string n = file;
  for (std::string ext : {".dll.a", ".a", ".lib"})
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) {
      n.resize(n.size() - ext.size());
      break;
    }
  return n.compare(0, 3, "lib") == 0 && file.find(".lib") == std::string::npos ? n.substr(3) : n;
}

std::optional<Error> CoffLink::check_coff_options(const PlanContext &ctx) const {
  const LinkRequest &req = ctx.request;
  if (!req.coff.def_output.empty() && req.exports.mode == exports::ExportPolicy::Mode::None && req.coff.def_input.empty())
    return make_error(ErrorCode::BadRequest, "a .def needs an export list, and the policy is 'none'", {}, "--def",
                      "choose an export policy other than none");
  return std::nullopt;
}

std::optional<Error> CoffLink::merge_exports(PlanContext &ctx) {
  const std::string &path = ctx.request.coff.def_input;
  if (path.empty())
    return std::nullopt;
  const TargetInfo &tgt = ctx.target();
  auto text = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!text)
    return make_error(ErrorCode::InputNotFound, "cannot read: " + text.getError().message(), path, "--def-in",
                      "check the path");
  auto def = exports::parse_def((*text)->getBuffer().str(), tgt.arch, path);
  if (!def)
    return def.take_error();
  exports::DefMerge merged = exports::merge_def(ctx.plan.exports, def.value());
  std::unordered_set<std::string_view> defined = ctx.defined_names();
  for (const exports::Export &e : merged.exports)
    if (!defined.count(e.symbol) && !defined.count(exports::decorate(tgt.format, tgt.arch, e.symbol)))
      return make_error(ErrorCode::MissingExport, "is exported by the .def but no input defines it", path, e.name,
                        "remove it from the .def, or add the object that defines it");
  ctx.plan.exports = std::move(merged.exports);
  ctx.plan.warnings = std::move(merged.conflicts);
  ctx.export_list = true;
  return std::nullopt;
}

std::optional<Error> CoffLink::export_file(PlanContext &ctx) {
  Plan &plan = ctx.plan;
  std::vector<Arg> &a = ctx.job().args;
  if (ctx.export_list) {
    auto def = exports::write_def(plan.exports, plan.job.output_name);
    if (!def)
      return def.take_error();
    plan.export_file = def.value();
    ctx.add_file("exports.def", plan.export_file);
    a.push_back(link_file("-def:", "exports.def"));
  }
  if (ctx.request.coff.implib_output.empty() && !ctx.request.coff.want_implib) {
    a.push_back(link_flag("-noimplib"));
  } else {
    plan.job.implib_name = llvm::sys::path::stem(plan.job.output_name).str() + ".lib";
    a.push_back(link_file("-implib:", plan.job.implib_name));
  }
  pdb(ctx);
  return std::nullopt;
}

// The PDB is written in the scratch directory under the name it is
// published by, which the DLL's CodeView record names (debuggers look for
// that name beside the DLL); -Brepro makes its GUID follow from the
// content.
void CoffLink::pdb(PlanContext &ctx) {
  const LinkRequest &req = ctx.request;
  Plan &plan = ctx.plan;
  if (req.coff.pdb_output.empty() && !req.coff.debug)
    return;
  if (!req.coff.pdb_output.empty()) {
    plan.pdb_path = req.coff.pdb_output;
  } else if (!req.output_path.empty()) {
    llvm::SmallString<256> p(req.output_path);
    llvm::sys::path::replace_extension(p, ".pdb");
    plan.pdb_path = p.str().str();
  }
  std::string file = !plan.pdb_path.empty() ? llvm::sys::path::filename(plan.pdb_path).str()
                                            : llvm::sys::path::stem(plan.job.output_name).str() + ".pdb";
  plan.job.pdb_name = file;
  std::vector<Arg> &a = plan.job.args;
  a.push_back(link_flag("-debug"));
  a.push_back(link_file("-pdb:", file));
  a.push_back(link_flag("-pdbaltpath:" + file));
  bool codeview = false;
  for (const LoadedInput &l : ctx.inputs)
    codeview |= l.info.codeview;
  if (!codeview)
    plan.diagnostics.push_back(Diagnostic{Severity::Warning,
                                          "no input carries CodeView debug info, so the PDB holds public symbols "
                                          "only; compile with -g -gcodeview (clang) or /Z7 (MSVC)",
                                          {}, {}});
}

// Only what an input references and nothing defines.
std::optional<Error> CoffLink::support_objects(PlanContext &ctx) {
  if (!ctx.request.coff.support_objects || runtime_has_support_symbols())
    return std::nullopt;
  Job &job = ctx.job();
  for (const std::string &sym : support_symbols(ctx.target())) {
    if (!ctx.references(sym) || ctx.defines(sym))
      continue;
    auto obj = support_object(ctx.target(), sym);
    if (!obj)
      return obj.take_error();
    std::string n = "support-" + sym + ".obj";
    job.files.push_back(JobFile::own(n, std::move(obj.value())));
    job.args.push_back(in_dir("", n));
    job.display_names.emplace_back(n, "<hotlink support object " + sym + ">");
    ctx.plan.support_objects.push_back(sym);
  }
  return std::nullopt;
}

// Where a COFF -l is looked for before the sysroot: -L, then the
// runtime's folders; a name that finds no file is an error naming it.
Expected<Arg> CoffLink::library(PlanContext &ctx, const std::string &lib) {
  const LinkRequest &req = ctx.request;
  std::vector<std::string> looked;
  std::string path = find_coff_library(lib, library_dirs(ctx), req.sysroot, ctx.target().arch, &looked);
  if (path.empty()) {
    std::string where, names;
    for (const std::string &d : looked)
      where += (where.empty() ? "" : ", ") + d;
    for (const std::string &n : coff_library_candidates(lib))
      names += (names.empty() ? "" : ", ") + n;
    return make_error(ErrorCode::InputNotFound,
                      "library '" + lib + "' not found (looked for " + names + (where.empty() ? "" : " in " + where) +
                          ")",
                      {}, "-l " + lib,
                      req.sysroot.empty() ? "add its folder with -L DIR, or give a sysroot (--sysroot " +
                                                mingw_sysroot(ctx.target().arch) + ")"
                                          : "add its folder with -L DIR, or name the file");
  }
  if (ctx.digest)
    ctx.fingerprint_file("library " + lib, path);
  return plain(path);
}

} // namespace hotlink::detail
