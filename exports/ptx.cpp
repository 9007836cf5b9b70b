#include "exports/ptx.h"

#include <cctype>
#include <string_view>

namespace hotlink::exports {

namespace {

// The text without // and /* */ comments (string literals do not occur in
// the directives read here), line breaks kept so that lines still count.
std::string without_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n')
        ++i;
      if (i < text.size())
        out += '\n';
    } else if (text.compare(i, 2, "/*") == 0) {
      std::size_t end = text.find("*/", i + 2);
      end = end == std::string_view::npos ? text.size() : end + 2;
      for (std::size_t j = i; j < end; ++j)
        if (text[j] == '\n')
          out += '\n';
      i = end - 1;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }

struct Cursor {
  std::string_view s;
  std::size_t at = 0;
  void skip_space() {
    while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at])))
      ++at;
  }
  std::string_view word() { // a directive (.func), a name or a number
    skip_space();
    std::size_t b = at;
    while (at < s.size() && ident_char(s[at]))
      ++at;
    return s.substr(b, at - b);
  }
  bool skip_parens() { // a balanced (...) list, such as a .func's return parameters
    skip_space();
    if (at >= s.size() || s[at] != '(')
      return false;
    int depth = 0;
    for (; at < s.size(); ++at) {
      depth += s[at] == '(' ? 1 : s[at] == ')' ? -1 : 0;
      if (depth == 0) {
        ++at;
        return true;
      }
    }
    return false;
  }
};

// One declaration from its linkage directive on: what it declares, and
// its name; "" where the statement declares nothing a link sees.
struct Declaration {
  std::string kind; // entry, func, global
  std::string name;
};

Declaration declaration(Cursor c) {
  Declaration d;
  for (std::string_view w = c.word(); !w.empty(); w = c.word()) {
    if (w == ".entry" || w == ".func") {
      d.kind = w.substr(1);
      if (w == ".func")
        c.skip_parens(); // (.param .b32 retval)
      d.name = std::string(c.word());
      return d;
    }
    if (w == ".global" || w == ".const") {
      // .global .align 4 .b32 NAME[4] = {...}: the name is the first word
      // that is not a directive or a number.
      d.kind = "global";
      for (std::string_view x = c.word(); !x.empty(); x = c.word())
        if (x[0] != '.' && !std::isdigit(static_cast<unsigned char>(x[0]))) {
          d.name = std::string(x);
          return d;
        }
      return {};
    }
  }
  return {};
}

} // namespace

// PTX's first directive, past blank space and comments, without copying
// the text: every object a link reads is asked this first (an ELF object
// answers at its first byte).
bool looks_like_ptx(const void *data, std::size_t size) {
  std::string_view text(static_cast<const char *>(data), size < 4096 ? size : 4096);
  std::size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
    } else if (text.compare(i, 2, "/*") == 0) {
      std::size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? end : end + 2;
    } else {
      break;
    }
  }
  if (i >= text.size())
    return false;
  Cursor c{text.substr(i)};
  std::string_view w = c.word();
  return w == ".version" || w == ".target" || w == ".address_size";
}

Expected<PtxModule> read_ptx_module(const void *data, std::size_t size, const std::string &name) {
  std::string text = without_comments(std::string_view(static_cast<const char *>(data), size));
  PtxModule m;
  std::size_t line_start = 0;
  int depth = 0; // inside a function body: nothing declared there is the module's
  for (std::size_t line_no = 1; line_start <= text.size(); ++line_no) {
    std::size_t end = text.find('\n', line_start);
    if (end == std::string::npos)
      end = text.size();
    std::string_view line(text.data() + line_start, end - line_start);
    if (depth == 0) {
      Cursor c{line};
      std::string_view first = c.word();
      if (first == ".version")
        m.version = std::string(c.word());
      else if (first == ".target" && m.target.empty())
        m.target = std::string(c.word());
      else if (first == ".visible" || first == ".weak" || first == ".extern" || first == ".entry") {
        Declaration d = declaration(first == ".entry" ? Cursor{line} : c);
        if (!d.kind.empty() && d.name.empty())
          return make_error(ErrorCode::InvalidInput,
                            "line " + std::to_string(line_no) + ": a ." + d.kind + " declaration without a name",
                            name, {}, "check the PTX the compiler wrote");
        bool external = first == ".extern";
        if (d.kind == "entry")
          m.kernels.push_back(d.name);
        else if (d.kind == "func")
          (external ? m.extern_functions : m.functions).push_back(d.name);
        else if (d.kind == "global")
          (external ? m.extern_data : m.data).push_back(d.name);
      }
    }
    for (char ch : line)
      depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
    if (depth < 0)
      depth = 0;
    line_start = end + 1;
  }
  if (m.target.empty())
    return make_error(ErrorCode::InvalidInput, "is PTX without a .target directive", name, {},
                      "compile it for one architecture (clang --cuda-gpu-arch=sm_NN, or -march=sm_NN)");
  return m;
}

ObjectInfo nvptx_object() {
  ObjectInfo info;
  info.format = Format::ELF;
  info.arch = Arch::NVPTX64;
  info.kind = FileKind::Object;
  return info;
}

Expected<ObjectInfo> read_ptx(const void *data, std::size_t size, const std::string &name) {
  auto m = read_ptx_module(data, size, name);
  if (!m)
    return m.take_error();
  ObjectInfo info = nvptx_object();
  auto add = [&](const std::vector<std::string> &names, bool defined, bool function) {
    for (const std::string &n : names) {
      Symbol s;
      s.name = n;
      s.defined = defined;
      s.function = function;
      s.data = !function;
      info.symbols.push_back(std::move(s));
    }
  };
  add(m->kernels, true, true);
  add(m->functions, true, true);
  add(m->data, true, false);
  add(m->extern_functions, false, true);
  add(m->extern_data, false, false);
  return info;
}

} // namespace hotlink::exports
