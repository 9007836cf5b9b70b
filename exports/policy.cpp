#include "hotlink/export_policy.h"

#include "exports/names.h"

#include "base/glob.h"

#include <algorithm>
#include <string_view>

namespace hotlink::exports {

const char *to_string(ExportPolicy::Mode m) {
  switch (m) {
  case ExportPolicy::Mode::EntryPoints: return "entry-points";
  case ExportPolicy::Mode::All: return "all";
  case ExportPolicy::Mode::List: return "list";
  case ExportPolicy::Mode::None: return "none";
  }
  return "?";
}

bool parse_mode(const std::string &s, ExportPolicy::Mode &out) {
  for (auto m : {ExportPolicy::Mode::EntryPoints, ExportPolicy::Mode::All,
                 ExportPolicy::Mode::List, ExportPolicy::Mode::None})
    if (s == to_string(m))
      return out = m, true;
  return false;
}

namespace {

// The C name inside a symbol name: always a substring of it, so the policy
// can work on views of the inputs' names (10^5 symbols, no copies).
std::string_view undecorated(Format format, Arch arch, std::string_view sym) {
  // ELF .symver: "foo@@v2" is the default version of foo (a reference to
  // foo binds to it); "foo@v1" is a hidden one, named with its version.
  if (format == Format::ELF) {
    std::size_t at = sym.find("@@");
    return at == std::string_view::npos || at == 0 ? sym : sym.substr(0, at);
  }
  if (format == Format::MachO)
    return sym.size() > 1 && sym[0] == '_' ? sym.substr(1) : sym;
  if (format != Format::COFF || arch != Arch::X86 || sym.empty() || sym[0] == '?')
    return sym;
  std::string_view s = sym;
  if (s[0] == '_' || s[0] == '@')
    s = s.substr(1);
  // Trailing @N (stdcall, fastcall): digits only.
  std::size_t at = s.rfind('@');
  if (at != std::string_view::npos && at > 0 && at + 1 < s.size() &&
      std::all_of(s.begin() + at + 1, s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    s = s.substr(0, at);
  return s;
}

} // namespace

std::string undecorate(Format format, Arch arch, const std::string &sym) {
  return std::string(undecorated(format, arch, sym));
}

namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Linker and CRT machinery that "export all" must never export: the union of
// what CMake's bindexplib and lld's MinGW AutoExporter leave out.
bool is_machinery(std::string_view c, std::string_view sym, Format f) {
  if (c.find('.') != std::string_view::npos || sym.find('.') != std::string_view::npos)
    return true; // .refptr.*, .weak.*, section-like names
  for (const char *s : {"_NULL_THUNK_DATA", "_iname"}) // kernel32_NULL_THUNK_DATA
    if (ends(c, s))
      return true;
  if (f == Format::COFF && (c == "do_pseudo_reloc" || c == "impure_ptr"))
    return true; // mingw-w64's runtime, as lld's MinGW auto-export leaves them
  // Every machinery name below starts with '_', '?' or 'D' (DllMain...):
  // most user symbols are ruled out by their first byte.
  auto may = [](std::string_view s) { return !s.empty() && (s[0] == '_' || s[0] == '?' || s[0] == 'D'); };
  if (!may(c) && !may(sym))
    return false;
  for (const char *p : {"__imp_", "__IMPORT_DESCRIPTOR_", "__NULL_IMPORT_DESCRIPTOR",
                        "_head_", "__real@", "__xmm@", "__ymm@", "__zmm@",
                        "??_G", "??_E", "__rtti_", "__builtin_", "__nm_",
                        "__real_", "__wrap_", "__guard_", "__security_",
                        "_CRT_", "__dyn_tls_", "__RUNTIME_PSEUDO_RELOC_LIST", "_pei386_runtime_relocator"})
    if (starts(c, p) || starts(sym, p))
      return true;
  if (f == Format::COFF)
    for (const char *n : {"DllMain", "DllEntryPoint", "DllMainCRTStartup", "_DllMainCRTStartup",
                          "_fltused", "__chkstk", "_tls_used", "_tls_index", "_tls_start", "_tls_end",
                          "__do_global_ctors", "__do_global_dtors", "__main", "__dso_handle"})
      if (c == n)
        return true;
  return false;
}

struct Candidate {
  const Symbol *sym;
  std::string_view c_name; // a view of sym->name
};

std::vector<base::Glob> compile(const std::vector<std::string> &globs, const char *flag,
                                std::optional<Error> &err) {
  std::vector<base::Glob> out;
  for (const std::string &g : globs) {
    auto p = base::Glob::compile(g);
    if (!p) {
      err = make_error(ErrorCode::BadRequest, "bad glob '" + g + "': " + p.error().message, {}, flag,
                       "use *, ? and [...] as in a shell");
      return {};
    }
    out.push_back(std::move(*p));
  }
  return out;
}

bool any_match(const std::vector<base::Glob> &ps, std::string_view s) {
  return std::any_of(ps.begin(), ps.end(), [&](const base::Glob &p) { return p.match(s); });
}

// One selection over the inputs' defined external symbols by C name; a
// strong definition beats a weak one, else the first wins. JIT objects can
// carry 10^5 symbols: names are views, and when the policy walks every
// symbol the candidates are ordered by name once (a stable sort: equal
// names stay in input order), which finds a name by binary search and
// gives the result its order; a short export list is looked up by
// scanning. The order takes 4 bytes a candidate, where a hash table of
// names took 60 (page faults are much of a large link's planning).
class Selection {
public:
  Selection(const std::vector<ObjectInfo> &inputs, Format format, Arch arch, bool walks_all)
      : format_(format), walks_all_(walks_all) {
    std::size_t total = 0;
    for (const ObjectInfo &in : inputs)
      total += in.symbols.size();
    candidates_.reserve(total);
    for (const ObjectInfo &in : inputs)
      for (const Symbol &s : in.symbols)
        if (s.defined && !s.hidden)
          candidates_.push_back(Candidate{&s, undecorated(format, arch, s.name)});
    taken_.assign(candidates_.size(), false);
    if (!walks_all_)
      return;
    by_name_.resize(candidates_.size());
    for (std::uint32_t i = 0; i < by_name_.size(); ++i)
      by_name_[i] = i;
    // stable_sort also because std::sort's introsort makes 4x the
    // comparisons on the names a JIT numbers (f0, f1, ... f99999).
    std::stable_sort(by_name_.begin(), by_name_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return candidates_[a].c_name < candidates_[b].c_name; });
    winner_.assign(candidates_.size(), false);
    for (std::size_t r = 0; r < by_name_.size();) {
      std::size_t end = run_end(r);
      winner_[by_name_[best_in(r, end)]] = true;
      r = end;
    }
  }

  const std::vector<Candidate> &candidates() const { return candidates_; }

  const Candidate *find(std::string_view name) const {
    if (walks_all_) {
      auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                                 [&](std::uint32_t i, std::string_view n) { return candidates_[i].c_name < n; });
      std::size_t r = static_cast<std::size_t>(it - by_name_.begin());
      if (r == by_name_.size() || candidates_[by_name_[r]].c_name != name)
        return nullptr;
      return &candidates_[by_name_[best_in(r, run_end(r))]];
    }
    const Candidate *best = nullptr;
    for (const Candidate &c : candidates_)
      if (c.c_name == name && (!best || (best->sym->weak && !c.sym->weak)))
        best = &c;
    return best;
  }
  bool is_winner(const Candidate &c) const { return walks_all_ ? winner_[index(c)] : find(c.c_name) == &c; }

  // Takes a winner (find's answer): one per name, so a flag per
  // candidate keeps each name once.
  void take(const Candidate &c) {
    if (!taken_[index(c)]) {
      taken_[index(c)] = true;
      chosen_.push_back(&c);
    }
  }
  bool empty() const { return chosen_.empty(); }

  // What "export all" and --include may export.
  bool exportable(const Candidate &c) const {
    if (is_machinery(c.c_name, c.sym->name, format_))
      return false;
    // A DLL cannot export a thread-local variable: its address differs per
    // thread and an import would name one slot (lld's MinGW auto-export
    // leaves them out too). ELF and Mach-O can export TLS, and do.
    if (format_ == Format::COFF && c.sym->tls)
      return false;
    // COFF and wasm: absolute symbols (@feat.00) and section-less markers
    // are machinery. ELF: ld.lld exports every visible global, untyped
    // labels and absolute symbols (_foo = 0x1000) included, and so does
    // "all".
    if (format_ != Format::ELF && !c.sym->function && !c.sym->data)
      return false;
    // COFF "export all" leaves out read-only data, like CMake: constants
    // are reached through functions, not imported.
    if (format_ == Format::COFF && c.sym->data && !c.sym->writable)
      return false;
    return true;
  }

  // The taken names in name order.
  std::vector<Export> result() {
    std::vector<Export> out;
    out.reserve(chosen_.size());
    auto add = [&out](const Candidate &c) {
      out.push_back(Export{std::string(c.c_name), c.sym->name, c.sym->data && !c.sym->function});
    };
    if (walks_all_) {
      for (std::uint32_t i : by_name_)
        if (taken_[i])
          add(candidates_[i]);
      return out;
    }
    std::sort(chosen_.begin(), chosen_.end(),
              [](const Candidate *a, const Candidate *b) { return a->c_name < b->c_name; });
    for (const Candidate *c : chosen_)
      add(*c);
    return out;
  }

private:
  std::size_t index(const Candidate &c) const { return static_cast<std::size_t>(&c - candidates_.data()); }
  // The end of the run of equal names that starts at by_name_[r].
  std::size_t run_end(std::size_t r) const {
    std::size_t e = r + 1;
    while (e < by_name_.size() && candidates_[by_name_[e]].c_name == candidates_[by_name_[r]].c_name)
      ++e;
    return e;
  }
  // The winner of a run: its first strong definition, else its first.
  std::size_t best_in(std::size_t r, std::size_t end) const {
    for (std::size_t i = r; i < end; ++i)
      if (!candidates_[by_name_[i]].sym->weak)
        return i;
    return r;
  }

  Format format_;
  bool walks_all_;
  std::vector<Candidate> candidates_;
  std::vector<std::uint32_t> by_name_;    // candidates by name (when walking all)
  std::vector<bool> winner_;              // by candidate (when walking all)
  std::vector<bool> taken_;               // by candidate
  std::vector<const Candidate *> chosen_; // in the order taken
};

// Every function f with a companion f<suffix>, and its companions.
std::optional<Error> take_entry_points(Selection &sel, const ExportPolicy &policy,
                                       const std::vector<base::Glob> &exclude) {
  std::string companion;
  for (const Candidate &c : sel.candidates()) {
    if (!c.sym->function || !sel.is_winner(c) || any_match(exclude, c.c_name))
      continue;
    std::vector<const Candidate *> companions;
    for (const std::string &suffix : policy.suffixes) {
      companion.assign(c.c_name).append(suffix);
      if (const Candidate *k = sel.find(companion))
        companions.push_back(k);
    }
    if (companions.empty())
      continue;
    sel.take(c);
    for (const Candidate *k : companions)
      if (!any_match(exclude, k->c_name))
        sel.take(*k);
  }
  if (!sel.empty() || !policy.names.empty() || !policy.include.empty())
    return std::nullopt;
  std::string sfx;
  for (const std::string &s : policy.suffixes)
    sfx += (sfx.empty() ? "" : ", ") + s;
  return make_error(ErrorCode::MissingExport,
                    "no entry point found: no defined function f with a companion f" +
                        (policy.suffixes.empty() ? std::string("<suffix>") : "{" + sfx + "}"),
                    {}, {}, "name the exports (--export), pick --policy all, or --policy none for lld's default");
}

// The names the policy lists literally: each must be defined.
std::optional<Error> take_names(Selection &sel, const ExportPolicy &policy, Format format, Arch arch) {
  for (const std::string &n : policy.names) {
    if (auto bad = check_name(n, format))
      return bad;
    const Candidate *c = sel.find(n);
    if (!c)
      return make_error(ErrorCode::MissingExport,
                        "is to be exported but no input defines it" +
                            (decorate(format, arch, n) != n ? " (looked for '" + decorate(format, arch, n) + "')"
                                                            : std::string()),
                        {}, n, "check the spelling, or add the object that defines it");
    sel.take(*c);
  }
  return std::nullopt;
}

} // namespace

Expected<std::vector<Export>> select_exports(const std::vector<ObjectInfo> &inputs, Format format, Arch arch,
                                             const ExportPolicy &policy) {
  std::optional<Error> err;
  auto include = compile(policy.include, "--include", err);
  auto exclude = compile(policy.exclude, "--exclude", err);
  if (err)
    return *err;
  bool walks_all = policy.mode == ExportPolicy::Mode::EntryPoints || policy.mode == ExportPolicy::Mode::All ||
                   !include.empty() || policy.names.size() > 16;
  Selection sel(inputs, format, arch, walks_all);
  if (policy.mode == ExportPolicy::Mode::EntryPoints)
    if (auto e = take_entry_points(sel, policy, exclude))
      return *e;
  if (policy.mode == ExportPolicy::Mode::All)
    for (const Candidate &c : sel.candidates())
      if (sel.is_winner(c) && sel.exportable(c) && !any_match(exclude, c.c_name))
        sel.take(c);
  if (!include.empty())
    for (const Candidate &c : sel.candidates())
      if (sel.is_winner(c) && any_match(include, c.c_name) && !any_match(exclude, c.c_name) && sel.exportable(c))
        sel.take(c);
  if (auto e = take_names(sel, policy, format, arch))
    return *e;
  return sel.result();
}

} // namespace hotlink::exports
