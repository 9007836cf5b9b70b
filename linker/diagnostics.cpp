// lld's output as diagnostics, and the Error a failed link returns.
#include "linker/plan.h"

#include "base/text.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace hotlink::detail {

namespace {

bool starts_with(const std::string &s, const std::string &p) {
  return s.compare(0, p.size(), p) == 0;
}

std::string after(const std::string &s, const std::string &marker) {
  std::size_t p = s.find(marker);
  if (p == std::string::npos)
    return {};
  std::string rest = s.substr(p + marker.size());
  std::size_t nl = rest.find('\n');
  return nl == std::string::npos ? rest : rest.substr(0, nl);
}

std::string base_name(const std::string &path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}


// lld's "relocation R_X86_64_PC32 cannot be used against symbol 'stderr';
// recompile with -fPIC" with its ">>> defined in / referenced by" lines,
// for every such error: one refusal naming every member that has one, so
// that a single run tells what to leave out.
Error position_dependent_error(const std::vector<Diagnostic> &diags) {
  struct Ref {
    std::string archive, member, symbol, defined_in, reloc;
  };
  std::vector<Ref> refs;
  std::vector<std::string> others; // lld's other errors, which must not be lost
  bool truncated = false;
  for (const Diagnostic &d : diags) {
    truncated |= d.message.find("too many errors emitted") != std::string::npos;
    if (!position_dependent(d)) {
      if (d.severity == Severity::Error && d.message.find("too many errors emitted") == std::string::npos)
        others.push_back(d.message.substr(0, d.message.find('\n')));
      continue;
    }
    Ref r;
    r.reloc = position_dependent_relocation(d);
    r.symbol = position_dependent_symbol(d);
    r.defined_in = base_name(after(d.message, ">>> defined in "));
    std::size_t pos = 0;
    while ((pos = d.message.find(">>>", pos)) != std::string::npos) {
      std::size_t eol = d.message.find('\n', pos);
      std::string line = d.message.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
      pos = eol == std::string::npos ? d.message.size() : eol;
      std::size_t in_archive = line.find(" in archive ");
      std::size_t paren = line.find(":(");
      if (in_archive == std::string::npos || paren == std::string::npos)
        continue;
      r.archive = line.substr(in_archive + 12);
      std::size_t start = line.find_last_of(" \t", paren);
      start = start == std::string::npos ? 0 : start + 1;
      r.member = line.substr(start, paren - start);
      break;
    }
    if (r.archive.empty())
      r.archive = d.file;
    bool seen = false;
    for (const Ref &o : refs)
      seen |= o.member == r.member && o.archive == r.archive;
    if (!seen)
      refs.push_back(std::move(r));
  }
  const Ref &first = refs.front();
  std::string who, symbols, exclude;
  bool members = std::all_of(refs.begin(), refs.end(), [](const Ref &r) { return !r.member.empty(); });
  for (const Ref &r : refs) {
    std::string subject = r.member.empty() ? "'" + base_name(r.archive) + "'"
                                           : "'" + r.member + "' of '" + base_name(r.archive) + "'";
    who += (who.empty() ? "" : ", ") + subject;
    if (symbols.find("'" + r.symbol + "'") == std::string::npos)
      symbols += std::string(symbols.empty() ? "" : ", ") + "'" + r.symbol + "'" +
                 (r.defined_in.empty() ? "" : " (in " + r.defined_in + ")");
    if (!r.member.empty())
      exclude += " --exclude-member " + r.member;
  }
  // What the relocation is decides why no shared object can hold it.
  std::string why = pc_relative_relocation(first.reloc)
                        ? ", a PC-relative reference that position-dependent and PIE code may use but no shared "
                          "object can hold, since the symbol may live in another image"
                        : ", an absolute address narrower than a pointer (position-dependent code), which no "
                          "shared object can hold: it is placed at an address known only when it is loaded";
  if (members)
    who = (refs.size() > 1 ? "members " : "member ") + who;
  std::string message = who + (refs.size() > 1 ? " refer to " : " refers to ") + symbols + " with " +
                        (first.reloc.empty() ? "a relocation" : first.reloc) + why +
                        (truncated ? " (lld stopped at its error limit: there may be more)" : "");
  if (!others.empty())
    message += "; lld also reported: " + base::list_some(others, 3);
  std::string hint = exclude.empty()
                         ? "recompile the object with -fPIC"
                         : "leave them out (" + exclude.substr(1) +
                               "; their symbols are then not exported, and a warning names what the rest needs of them), or "
                               "rebuild the library "
                               "with -fPIC";
  return make_error(ErrorCode::LinkFailed, message, first.archive, first.symbol, hint);
}

} // namespace

bool position_dependent(const Diagnostic &d) {
  return d.severity == Severity::Error &&
         d.message.find("cannot be used against symbol") != std::string::npos &&
         d.message.find("recompile with -fPIC") != std::string::npos;
}

std::string position_dependent_relocation(const Diagnostic &d) {
  if (!position_dependent(d))
    return {};
  std::string reloc = after(d.message.substr(0, d.message.find('\n')), "relocation ");
  return reloc.substr(0, reloc.find(' '));
}

bool pc_relative_relocation(const std::string &reloc) {
  // R_X86_64_PC32, R_386_PC32, R_AARCH64_PREL32, R_AARCH64_ADR_PREL_PG_HI21,
  // R_RISCV_PCREL_HI20; not R_X86_64_32, R_X86_64_32S, R_AARCH64_ABS32.
  return reloc.find("PC") != std::string::npos || reloc.find("PREL") != std::string::npos;
}

std::string position_dependent_symbol(const Diagnostic &d) {
  if (!position_dependent(d))
    return {};
  std::string symbol = after(d.message.substr(0, d.message.find('\n')), "against symbol '");
  return symbol.substr(0, symbol.find('\''));
}

std::vector<Diagnostic> parse_diagnostics(const Job &job,
                                          const std::string &text) {
  std::vector<Diagnostic> out;
  const std::string prefix = job.flavor + ": ";
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line =
        text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty())
      continue;
    std::string body = starts_with(line, prefix) ? line.substr(prefix.size()) : line;
    Severity sev;
    bool starts = true;
    if (starts_with(body, "error: "))
      sev = Severity::Error, body = body.substr(7);
    else if (starts_with(body, "warning: "))
      sev = Severity::Warning, body = body.substr(9);
    else if (starts_with(line, prefix))
      sev = Severity::Note;
    else
      starts = false;
    if (!starts && !out.empty()) {
      out.back().message += "\n" + line; // ">>> referenced by ..." lines
      continue;
    }
    out.push_back(Diagnostic{starts ? sev : Severity::Note, body, {}, {}});
  }
  // lld repeats one error for every relocation: keep the first of each.
  std::vector<Diagnostic> unique;
  for (Diagnostic &d : out) {
    bool seen = false;
    for (const Diagnostic &u : unique)
      seen |= u.severity == d.severity && u.message == d.message;
    if (!seen)
      unique.push_back(std::move(d));
  }
  out = std::move(unique);
  for (Diagnostic &d : out) {
    for (const char *marker :
         {"undefined symbol: ", "undefined hidden symbol: ", "undefined protected symbol: ", "duplicate symbol: ",
          "symbol not found: "}) {
      std::string s = after(d.message, marker);
      if (!s.empty()) {
        // lld-link names an __imp_ reference by its meaning.
        const std::string dllimport = "__declspec(dllimport) ";
        if (s.compare(0, dllimport.size(), dllimport) == 0)
          s.erase(0, dllimport.size());
        d.symbol = s;
        break;
      }
    }
    // Map lld's paths back to input names; the first one named is the file.
    std::size_t first = std::string::npos;
    for (const auto &[printed, shown] : job.display_names) {
      std::size_t p = d.message.find(printed);
      if (p == std::string::npos)
        continue;
      if (p < first) {
        first = p;
        d.file = shown;
      }
      for (std::size_t q = p; q != std::string::npos;
           q = d.message.find(printed, q + shown.size()))
        d.message.replace(q, printed.size(), shown);
    }
  }
  return out;
}

bool needs_every_error(const std::vector<Diagnostic> &diags) {
  bool truncated = false, position = false;
  for (const Diagnostic &d : diags) {
    truncated |= d.message.find("too many errors emitted") != std::string::npos;
    position |= position_dependent(d);
  }
  return truncated && position;
}

Error link_error(const std::vector<Diagnostic> &diags, const Plan &plan, const LinkRequest &req,
                 const std::string &fallback) {
  for (const Diagnostic &d : diags) {
    if (d.severity != Severity::Error)
      continue;
    if (position_dependent(d))
      return position_dependent_error(diags);
    ErrorCode code = ErrorCode::LinkFailed;
    std::string linker = linker_name(plan.job.flavor);
    std::string hint = "see the diagnostics for " + linker + "'s full report";
    if (d.message.find("undefined symbol") != std::string::npos ||
        d.message.find("undefined hidden symbol") != std::string::npos) {
      code = ErrorCode::UndefinedSymbol;
      hint = plan.platform->undefined_hint(req, d.symbol);
    } else if (std::size_t at = d.message.find(" has undefined version "); at != std::string::npos) {
      // .symver names a version no script defines: ld.lld refuses it too.
      std::string version = d.message.substr(at + 23);
      version = version.substr(0, version.find_first_of(" \n"));
      hint = "define version " + version + " in a version script, as ld.lld needs (--version-script FILE with '" +
             version + " { };')";
    } else if (d.message.find("duplicate symbol") != std::string::npos) {
      code = ErrorCode::DuplicateSymbol;
      hint = "remove one of the definitions, or make it weak or static";
    }
    std::string first_line = d.message.substr(0, d.message.find('\n'));
    return make_error(code, linker + ": " + first_line, d.file, d.symbol, hint);
  }
  return make_error(ErrorCode::LinkFailed, fallback);
}

} // namespace hotlink::detail
