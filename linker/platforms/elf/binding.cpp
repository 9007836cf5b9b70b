#include "linker/platforms/elf/binding.h"

#include "exports/writers.h"

#include <algorithm>
#include <unordered_map>

namespace hotlink::detail {

namespace {

// The inputs' definitions by name (the first one, as lld takes it).
std::unordered_map<std::string, const exports::Symbol *> definitions(const PlanContext &ctx) {
  std::unordered_map<std::string, const exports::Symbol *> out;
  for (const LoadedInput &l : ctx.inputs)
    for (const exports::Symbol &s : l.info.symbols)
      if (s.defined && !s.hidden)
        out.emplace(s.name, &s);
  return out;
}

// Without an export list (--policy none) every definition is exported.
std::vector<exports::Export> exported(const PlanContext &ctx,
                                      const std::unordered_map<std::string, const exports::Symbol *> &defined) {
  if (ctx.export_list)
    return ctx.plan.exports;
  std::vector<exports::Export> all;
  for (const auto &[name, s] : defined)
    all.push_back({name, name, s->data});
  std::sort(all.begin(), all.end(), [](const exports::Export &a, const exports::Export &b) { return a.symbol < b.symbol; });
  return all;
}

std::string warning_for(const std::string &symbol) {
  return "exported variable '" + symbol +
         "' is bound inside the library: its code reaches it PC-relative (built as PIE, as distribution "
         "static libraries are), which a shared object can only bind to itself. A host that uses '" + symbol +
         "' directly and is built as PIE or without -fPIC gets a copy relocation and sees its own copy, not "
         "the library's; have the host read and write it through the library's functions, or rebuild the "
         "object with -fPIC";
}

} // namespace

Binding plan_binding(const PlanContext &ctx) {
  Binding b;
  // Most links export functions only (the entry-point convention): nothing
  // to list, and no symbol table to index.
  if (ctx.export_list && std::none_of(ctx.plan.exports.begin(), ctx.plan.exports.end(),
                                      [](const exports::Export &e) { return e.data; }))
    return b;
  auto defined = definitions(ctx);
  for (const exports::Export &e : exported(ctx, defined)) {
    auto it = defined.find(e.symbol);
    if (it == defined.end())
      continue;
    const exports::Symbol &s = *it->second;
    bool variable = (s.data || s.common) && !s.tls && !s.function;
    if (variable && !s.weak)
      b.data.insert(e.symbol);
    if (variable || s.weak)
      b.preemptible.push_back(e);
  }
  if (b.data.empty())
    b.preemptible.clear();
  return b;
}

bool bind_position_dependent_data(Binding &binding, Plan &plan, const std::vector<Diagnostic> &lld_said,
                                  std::vector<Diagnostic> &changes) {
  std::unordered_set<std::string> bound(binding.bound.begin(), binding.bound.end());
  bool truncated = false;
  for (const Diagnostic &d : lld_said) {
    truncated |= d.message.find("too many errors emitted") != std::string::npos;
    std::string symbol = position_dependent_symbol(d);
    // Binding the variable inside satisfies a PC-relative reference; an
    // absolute 32-bit one stays refused, so binding would only warn.
    if (!pc_relative_relocation(position_dependent_relocation(d)))
      continue;
    if (binding.data.count(symbol) && bound.insert(symbol).second) {
      binding.bound.push_back(symbol);
      changes.push_back(Diagnostic{Severity::Warning, warning_for(symbol), d.file, symbol});
    }
  }
  if (changes.empty())
    return false;
  std::vector<exports::Export> still;
  for (const exports::Export &e : binding.preemptible)
    if (!bound.count(e.symbol))
      still.push_back(e);
  auto list = exports::write_dynamic_list(still);
  if (!list)
    return false; // it was written once already: cannot happen
  for (JobFile &f : plan.job.files)
    if (f.name == kDynamicList)
      f = JobFile::own(kDynamicList, std::vector<std::uint8_t>(list->begin(), list->end()));
  if (truncated)
    plan.job.args.push_back(plain("--error-limit=0"));
  return true;
}

} // namespace hotlink::detail
