#include "linker/verify.h"

#include "linker/platforms/platform.h"

namespace hotlink {

Expected<bool> loads_here(const std::string &target) {
  auto host = detail::resolve_target("");
  auto t = detail::resolve_target(target);
  if (!t)
    return t.take_error();
  return host && host->format == t->format && host->arch == t->arch;
}

Expected<loader::Verified> verify_for_target(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const std::string &target, loader::VerifyOptions options) {
  auto here = loads_here(target);
  if (!here)
    return here.take_error();
  if (*here)
    return loader::verify(bytes, name, options);
  auto t = detail::resolve_target(target);
  options.format = t->format;
  options.arch = t->arch;
  auto v = loader::verify(bytes, name, options);
  if (!v)
    return v;
  if (t->platform->check_artifact)
    if (auto err = t->platform->check_artifact(bytes, name))
      return std::move(*err);
  return v;
}

} // namespace hotlink
