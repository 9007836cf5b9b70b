// Internal. What the two COFF platforms (msvc/, mingw/) share: a .def for
// the exports (written by exports/, merged with a user's .def), the import
// library and PDB as companions, COFF -l lookup, and the support objects a
// link without a C runtime needs. The MinGW driver spells lld-link's
// options as --Xlink=OPTION; link_flag() and link_file() say them right.
#pragma once

#include "linker/platforms/platform.h"

#include <string>
#include <vector>

namespace hotlink::detail {

// The -l name of a library file: "libmingwex.a" -> "mingwex",
// "user32.lib" -> "user32".
std::string library_name(const std::string &file);

class CoffLink : public PlatformLink {
public:
  explicit CoffLink(bool mingw) : mingw_(mingw) {}

  std::optional<Error> merge_exports(PlanContext &ctx) override;
  std::optional<Error> export_file(PlanContext &ctx) override;
  bool links_whole_archives() const override { return false; }
  Arg library_path(const std::string &dir) const override { return plain((mingw_ ? "-L" : "-libpath:") + dir); }
  std::optional<Error> support_objects(PlanContext &ctx) override;
  Expected<Arg> library(PlanContext &ctx, const std::string &name) override;

protected:
  // An lld-link option: as it is, or through lld's MinGW driver.
  Arg link_flag(const std::string &s) const { return plain(mingw_ ? "--Xlink=" + s : s); }
  Arg link_file(const std::string &before, const std::string &name) const {
    return in_dir(mingw_ ? "--Xlink=" + before : before, name);
  }
  // Folders searched for -l before the sysroot (-L, then a runtime's).
  virtual std::vector<std::string> library_dirs(const PlanContext &ctx) const { return ctx.request.library_paths; }
  // Whether the runtime environment already defines the support symbols.
  virtual bool runtime_has_support_symbols() const { return false; }
  // Shared checks of the COFF options (.def needs an export list).
  std::optional<Error> check_coff_options(const PlanContext &ctx) const;

private:
  void pdb(PlanContext &ctx);
  bool mingw_;
};

} // namespace hotlink::detail
