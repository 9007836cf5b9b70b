#include "linker/platforms/nvptx/images.h"

#include <cctype>

namespace hotlink::detail::nvptx {

unsigned sm_number(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
    return 0;
  std::size_t i = 3;
  unsigned n = 0;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])))
    n = n * 10 + unsigned(arch[i++] - '0');
  bool suffix_ok = i == arch.size() || (i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f'));
  return suffix_ok && i >= 5 && n >= 50 ? n : 0;
}

Choice choose_image(const std::vector<exports::FatbinImage> &images, unsigned sm) {
  using Kind = exports::FatbinImage::Kind;
  const exports::FatbinImage *cubin = nullptr, *ptx = nullptr, *lto = nullptr;
  Choice c;
  auto latest = [&](const exports::FatbinImage *&best, const exports::FatbinImage &i) {
    if (i.sm <= sm && (!best || i.sm > best->sm))
      best = &i;
  };
  for (const exports::FatbinImage &i : images) {
    c.has += std::string(c.has.empty() ? "" : ", ") +
             (i.kind == Kind::LtoIr ? "lto_" + std::to_string(i.sm) + " LTO-IR"
                                    : "sm_" + std::to_string(i.sm) + (i.kind == Kind::Ptx ? " PTX" : " cubin"));
    if (i.kind == Kind::Ptx)
      latest(ptx, i);
    else if (i.kind == Kind::LtoIr)
      latest(lto, i);
    else if (i.sm / 10 == sm / 10)
      latest(cubin, i);
  }
  c.image = cubin ? cubin : lto ? lto : ptx;
  return c;
}

} // namespace hotlink::detail::nvptx
