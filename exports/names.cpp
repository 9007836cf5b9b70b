#include "exports/names.h"

#include <cstdio>

namespace hotlink::exports {

std::optional<Error> check_name(const std::string &name, Format format) {
  auto refuse = [&](std::string why) {
    std::string shown;
    for (unsigned char c : name.substr(0, 80)) {
      if (c >= 0x21 && c < 0x7f) {
        shown += static_cast<char>(c);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        shown += buf;
      }
    }
    if (name.size() > 80)
      shown += "...";
    return make_error(ErrorCode::BadSymbolName, std::move(why), {}, shown,
                      "rename the symbol in the JIT's output, or leave it out "
                      "of the export list");
  };
  if (name.empty())
    return refuse("an empty symbol name cannot be exported");
  if (name.size() > kMaxNameLength)
    return refuse("the name is " + std::to_string(name.size()) +
                  " bytes long; hotlink exports names of at most " +
                  std::to_string(kMaxNameLength));
  for (unsigned char c : name) {
    if (c < 0x21 || c >= 0x7f) {
      char buf[64];
      std::snprintf(buf, sizeof buf,
                    "the name contains byte 0x%02x (whitespace, control or "
                    "non-ASCII)", c);
      return refuse(buf);
    }
    switch (c) {
    case '"': case '\'': case ';': case '#': case '{': case '}':
    case ',': case '=': case '\\': case '*': case '[': case ']':
      return refuse(std::string("the name contains '") +
                    static_cast<char>(c) +
                    "', which is syntax in export scripts or lld flags");
    case '?':
      // MSVC-mangled C++ names start with '?', so COFF keeps it; Mach-O
      // export lists would read it as a glob.
      if (format == Format::MachO)
        return refuse("the name contains '?', a glob character in Mach-O "
                      "exported-symbols lists");
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

std::string decorate(Format format, Arch arch, const std::string &name) {
  if (format == Format::MachO || (format == Format::COFF && arch == Arch::X86))
    return "_" + name;
  return name;
}

} // namespace hotlink::exports
