#include "exports/names.h"

#include <cstdio>

namespace hotlink::exports {

Error name_error(const std::string &name, std::string why) {
    std::string shown;
    for (unsigned char c : name.substr(0, 80)) {
      if (c >= 0x20 && c < 0x7f) {
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
}

std::optional<Error> check_name_basics(const std::string &name) {
  auto refuse = [&](std::string why) { return name_error(name, std::move(why)); };
  if (name.empty())
    return refuse("an empty symbol name cannot be exported");
  if (name.size() > kMaxNameLength)
    return refuse("the name is " + std::to_string(name.size()) +
                  " bytes long; hotlink exports names of at most " +
                  std::to_string(kMaxNameLength));
  for (unsigned char c : name)
    if (c < 0x20 || c >= 0x7f) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "the name contains byte 0x%02x (a control or non-ASCII byte)", c);
      return refuse(buf);
    }
  return std::nullopt;
}

std::optional<Error> check_name(const std::string &name, Format format) {
  if (auto e = check_name_basics(name))
    return e;
  auto refuse = [&](const std::string &why) {
    return name_error(name, why + " in a " +
                                (format == Format::ELF     ? std::string("version script")
                                 : format == Format::MachO ? std::string("Mach-O exported-symbols list")
                                 : format == Format::COFF  ? std::string(".def file")
                                 : format == Format::Wasm  ? std::string("wasm --export flag")
                                                           : std::string("export list")));
  };
  for (unsigned char c : name) {
    auto ch = [c] { return c == ' ' ? std::string("a space") : std::string("'") + static_cast<char>(c) + "'"; };
    switch (format) {
    case Format::ELF:
      if (c == '"' || c == '\\')
        return refuse("the name contains " + ch() + ", which cannot be quoted");
      break;
    case Format::MachO:
      if (c == ' ' || c == '#' || c == '*' || c == '?' || c == '[' || c == ']')
        return refuse("the name contains " + ch() + ", which is syntax");
      break;
    case Format::COFF:
      if (c == ' ' || c == ';' || c == ',' || c == '=' || c == '"')
        return refuse("the name contains " + ch() + ", which is syntax");
      break;
    case Format::Wasm:
      if (c == ',')
        return refuse("the name contains ','");
      break;
    case Format::Unknown: // the strictest: every rule above
      if (c == '"' || c == '\\' || c == ' ' || c == '#' || c == '*' || c == '?' ||
          c == '[' || c == ']' || c == ';' || c == ',' || c == '=')
        return refuse("the name contains " + ch() + ", which is syntax");
      break;
    }
  }
  if (format == Format::COFF && name[0] == '@')
    return refuse("a leading '@' reads as an ordinal");
  return std::nullopt;
}

std::string decorate(Format format, Arch arch, const std::string &name) {
  if (format == Format::MachO || (format == Format::COFF && arch == Arch::X86))
    return "_" + name;
  return name;
}

} // namespace hotlink::exports
