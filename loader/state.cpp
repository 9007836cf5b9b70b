#include "hotlink/state_carry.h"

#include "hotlink/blake3.h"
#include "hotlink/state.h"
#include "base/memo.h"
#include "loader/pairing.h"

#include "image/image.h"
#include "loader/version_image.h"
#include "loader/dwarf/dwarf.h"

#include <cstring>
#include <map>

namespace hotlink::loader {

Expected<std::vector<StateVariable>> state_variables(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                     std::uintptr_t load_base, const std::string &identity) {
  if (image::kind_of(bytes.data(), bytes.size()) != image::Kind::Elf)
    return std::vector<StateVariable>(); // no state on other formats yet (hotlink/state.h)
  auto table = read_symbol_table(bytes, name, /*forwarding=*/false);
  if (!table)
    return table.take_error();
  return state_variables_of(std::move(table->state), bytes, name, load_base, identity);
}

Expected<image::SymbolTable> read_symbol_table(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                               bool forwarding) {
  auto table = image::read_elf_symbols(bytes.data(), bytes.size(), name, HOTLINK_STATE_SECTION, forwarding);
  if (!table) {
    Error e = table.take_error();
    e.message = "cannot read its symbol table: " + e.message;
    return e;
  }
  return table;
}

Expected<std::vector<StateVariable>> state_variables_of(std::vector<image::DataObject> objects,
                                                        const std::vector<std::uint8_t> &bytes,
                                                        const std::string &name, std::uintptr_t load_base,
                                                        const std::string &identity) {
  std::vector<StateVariable> vars;
  std::vector<std::uint64_t> addresses;
  for (image::DataObject &o : objects) {
    StateVariable v;
    v.name = std::move(o.name);
    v.unit = std::move(o.unit);
    v.address = reinterpret_cast<void *>(load_base + o.address);
    v.size = o.size;
    vars.push_back(std::move(v));
    addresses.push_back(o.address);
  }
  if (vars.empty())
    return vars;
  // The layouts, read from the debug info (the DWARF module: dwarf.h) once
  // per artifact: reading it is most of what state adds to a reload of
  // code built with -g, and an engine alternating two versions, or
  // reloading one it had before, reloads the same bytes.
  auto module = dwarf::module();
  if (!module)
    return module.take_error();
  static base::Memo<std::string, std::vector<std::string>> layouts(64);
  std::string key = identity.empty() ? "blake3:" + trust::blake3_hex(bytes) : identity;
  std::string why;
  auto found = layouts.compute_once(key, [&]() -> std::optional<std::vector<std::string>> {
    std::vector<std::string> out;
    if (!(*module)->layouts(bytes.data(), bytes.size(), addresses.data(), addresses.size(), out, why))
      return std::nullopt;
    return out;
  });
  if (!found)
    return make_error(ErrorCode::InvalidInput, "cannot read its debug information: " + why, name);
  for (std::size_t i = 0; i < vars.size(); ++i)
    vars[i].layout = (*found)[i];
  // Duplicate keys (two units with the same file name) cannot be paired.
  std::map<std::string, int> seen;
  for (const StateVariable &v : vars)
    if (++seen[v.key()] == 2)
      return make_error(ErrorCode::StateMismatch, "two state variables have the same name in units of the same name",
                        name, v.key(), "rename one of them, or one of the source files");
  return vars;
}

// --- Pairing and copying ---------------------------------------------------------------

namespace {

std::string shorten(const std::string &s) { return s.size() <= 160 ? s : s.substr(0, 157) + "..."; }

std::string mismatch_of(const StateVariable &old, const StateVariable &fresh) {
  if (old.size != fresh.size)
    return "its size changed from " + std::to_string(old.size) + " to " + std::to_string(fresh.size) + " bytes" +
           (!old.layout.empty() && !fresh.layout.empty()
                ? " (" + shorten(old.layout) + " -> " + shorten(fresh.layout) + ")"
                : "");
  if (!old.layout.empty() && !fresh.layout.empty() && old.layout != fresh.layout)
    return "its layout changed at the same size: " + shorten(old.layout) + " -> " + shorten(fresh.layout);
  return {};
}

// The first pointer-aligned word of `v` whose value lies in `image`; -1 if none.
long long pointer_into(const StateVariable &v, const std::vector<ImageRange> &image) {
  auto start = reinterpret_cast<std::uintptr_t>(v.address);
  std::uintptr_t first = (start + sizeof(void *) - 1) & ~(sizeof(void *) - 1);
  for (std::uintptr_t a = first; a + sizeof(void *) <= start + v.size; a += sizeof(void *)) {
    std::uintptr_t word;
    std::memcpy(&word, reinterpret_cast<const void *>(a), sizeof word);
    if (within(image, word))
      return static_cast<long long>(a - start);
  }
  return -1;
}

Error refusal(const std::string &what, const std::string &input, const StateVariable &v, const std::string &hint) {
  return make_error(ErrorCode::StateMismatch, "state variable '" + v.key() + "' cannot be carried: " + what, input,
                    v.name, hint);
}

} // namespace

Expected<StateCarry> plan_state_carry(const std::vector<StateVariable> &old, const std::vector<StateVariable> &fresh,
                                      StateMismatchPolicy policy, const std::string &input) {
  StateCarry plan;
  for (const auto &[o, f] : pair_up(old, fresh)) {
    if (!o) {
      plan.report.added.push_back(f->key());
      continue;
    }
    if (!f) {
      plan.report.dropped.push_back(o->key());
      continue;
    }
    StateCarry::Pair p{o, f, mismatch_of(*o, *f)};
    if (!p.mismatch.empty() && policy == StateMismatchPolicy::Refuse)
      return refusal(p.mismatch, input, *f,
                     "keep the variable's type, rename it to start afresh, or set "
                     "ModuleOptions::state_mismatch to Reset or Migrate");
    plan.pairs.push_back(p);
  }
  return plan;
}

std::optional<Error> carry_state(StateCarry &plan, const std::vector<ImageRange> &old_image,
                                 StateMismatchPolicy policy, const StateMigration &migrate, const std::string &input) {
  // Decide every variable before writing any.
  for (StateCarry::Pair &p : plan.pairs) {
    if (!p.mismatch.empty())
      continue;
    long long at = pointer_into(*p.old, old_image);
    if (at < 0)
      continue;
    p.mismatch = "the word at offset " + std::to_string(at) +
                 " points into the old version's image, which is unmapped once it is retired";
    if (policy == StateMismatchPolicy::Refuse)
      return refusal(p.mismatch, input, *p.fresh,
                     "keep pointers to the host's memory (or indices) in state, not to the kernel's own code or "
                     "data; or set ModuleOptions::state_mismatch to Reset or Migrate");
  }
  StateReport &report = plan.report;
  for (StateCarry::Pair &p : plan.pairs) {
    const std::string key = p.fresh->key();
    if (p.mismatch.empty()) {
      std::memcpy(p.fresh->address, p.old->address, p.fresh->size);
      report.carried.push_back(key);
    } else if (policy == StateMismatchPolicy::Migrate && migrate) {
      if (auto err = migrate(*p.old, *p.fresh)) {
        Error e = *err;
        e.code = ErrorCode::StateMismatch;
        if (e.input.empty())
          e.input = input;
        if (e.symbol.empty())
          e.symbol = p.fresh->name;
        return e;
      }
      report.migrated.push_back(key);
    } else {
      report.reset.push_back(key);
      report.warnings.push_back("state variable '" + key + "' was not carried (the version made current keeps its own value: " +
                                "its initial value after a reload): " + p.mismatch);
    }
  }
  return std::nullopt;
}

} // namespace hotlink::loader
