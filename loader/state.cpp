#include "hotlink/state_carry.h"

#include "hotlink/blake3.h"
#include "hotlink/state.h"
#include "base/memo.h"
#include "loader/pairing.h"

#include "llvm/DebugInfo/DWARF/DWARFCompileUnit.h"
#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/DebugInfo/DWARF/DWARFDie.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>

namespace hotlink::loader {

namespace {

using llvm::DWARFDie;
namespace dwarf = llvm::dwarf;

// --- Layouts from the debug info -------------------------------------------------

constexpr int kMaxDepth = 8;

std::string type_name(const DWARFDie &t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::dumpTypeQualifiedName(t, os);
  return s;
}

std::uint64_t constant(const DWARFDie &d, dwarf::Attribute a, std::uint64_t otherwise = 0) {
  if (auto v = d.find(a))
    if (auto c = v->getAsUnsignedConstant())
      return *c;
  return otherwise;
}

std::string describe(DWARFDie t, int depth);

std::string describe_members(const DWARFDie &t, int depth) {
  std::string out;
  for (DWARFDie m : t.children()) {
    bool base = m.getTag() == dwarf::DW_TAG_inheritance;
    if (m.getTag() != dwarf::DW_TAG_member && !base)
      continue;
    if (m.find(dwarf::DW_AT_external) || m.find(dwarf::DW_AT_declaration))
      continue; // a static data member: not part of the object
    out += base ? std::string("base") : std::string(m.getShortName() ? m.getShortName() : "?");
    out += "@" + std::to_string(constant(m, dwarf::DW_AT_data_member_location));
    if (auto bits = m.find(dwarf::DW_AT_bit_size))
      out += "." + std::to_string(constant(m, dwarf::DW_AT_data_bit_offset)) + "/" +
             std::to_string(bits->getAsUnsignedConstant().value_or(0));
    out += ":" + describe(m.getAttributeValueAsReferencedDie(dwarf::DW_AT_type), depth + 1) + ";";
  }
  return out;
}

std::string describe(DWARFDie t, int depth) {
  if (!t)
    return "void";
  std::string size = "(" + std::to_string(t.getTypeSize(8).value_or(0)) + ")";
  switch (t.getTag()) {
  case dwarf::DW_TAG_typedef:
  case dwarf::DW_TAG_const_type:
  case dwarf::DW_TAG_volatile_type:
  case dwarf::DW_TAG_restrict_type:
  case dwarf::DW_TAG_atomic_type:
    return describe(t.getAttributeValueAsReferencedDie(dwarf::DW_AT_type), depth);
  case dwarf::DW_TAG_pointer_type:
  case dwarf::DW_TAG_reference_type:
  case dwarf::DW_TAG_rvalue_reference_type:
  case dwarf::DW_TAG_ptr_to_member_type:
    return "ptr" + size; // the pointee is the pointer's business, not the copy's
  case dwarf::DW_TAG_array_type: {
    std::string dims;
    for (DWARFDie r : t.children())
      if (r.getTag() == dwarf::DW_TAG_subrange_type) {
        std::uint64_t n = r.find(dwarf::DW_AT_count) ? constant(r, dwarf::DW_AT_count)
                                                      : constant(r, dwarf::DW_AT_upper_bound) + 1;
        dims += "[" + std::to_string(n) + "]";
      }
    return describe(t.getAttributeValueAsReferencedDie(dwarf::DW_AT_type), depth) + dims;
  }
  case dwarf::DW_TAG_structure_type:
  case dwarf::DW_TAG_class_type:
  case dwarf::DW_TAG_union_type: {
    std::string kind = t.getTag() == dwarf::DW_TAG_union_type ? "union " : "struct ";
    std::string align = t.find(dwarf::DW_AT_alignment) ? "align" + std::to_string(constant(t, dwarf::DW_AT_alignment)) : "";
    if (depth >= kMaxDepth)
      return kind + type_name(t) + size + align;
    return kind + type_name(t) + "{" + describe_members(t, depth) + "}" + size + align;
  }
  default: // base types, enums: their name and size
    return type_name(t) + size;
  }
}

// The layout of the variable at link-time address `vaddr`, or "".
std::string layout_at(llvm::DWARFContext &dwarf_ctx, std::uint64_t vaddr) {
  llvm::DWARFCompileUnit *cu = dwarf_ctx.getCompileUnitForDataAddress(vaddr);
  if (!cu)
    return {};
  DWARFDie var = cu->getVariableForAddress(vaddr);
  if (!var)
    return {};
  std::string layout = describe(var.getAttributeValueAsReferencedDie(dwarf::DW_AT_type), 0);
  if (var.find(dwarf::DW_AT_alignment))
    layout += "align" + std::to_string(constant(var, dwarf::DW_AT_alignment));
  return layout;
}

// --- Reading the symbol table -------------------------------------------------------

template <class ELFT>
std::vector<StateVariable> read_elf(const llvm::object::ELFObjectFile<ELFT> &obj, std::uintptr_t load_base) {
  std::vector<StateVariable> out;
  std::optional<llvm::object::SectionRef> state_section;
  for (const llvm::object::SectionRef &s : obj.sections())
    if (auto n = s.getName(); n && *n == HOTLINK_STATE_SECTION)
      state_section = s;
  if (!state_section)
    return out;
  std::string unit; // the FILE entry the local symbols that follow belong to
  for (const llvm::object::ELFSymbolRef &sym : obj.symbols()) {
    auto type = sym.getELFType();
    auto name = sym.getName();
    if (type == llvm::ELF::STT_FILE) {
      unit = name ? name->str() : std::string();
      continue;
    }
    if (type != llvm::ELF::STT_OBJECT || !name)
      continue;
    auto sec = sym.getSection();
    if (!sec || *sec == obj.section_end() || **sec != *state_section)
      continue;
    auto addr = sym.getAddress();
    if (!addr)
      continue;
    StateVariable v;
    v.name = name->str();
    v.unit = sym.getBinding() == llvm::ELF::STB_LOCAL ? unit : std::string();
    v.address = reinterpret_cast<void *>(load_base + *addr);
    v.size = sym.getSize();
    out.push_back(std::move(v));
  }
  return out;
}

} // namespace

Expected<std::vector<StateVariable>> state_variables(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                     std::uintptr_t load_base, const std::string &identity) {
  llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size()), name);
  auto bin = llvm::object::ObjectFile::createObjectFile(ref);
  if (!bin) {
    std::string why = llvm::toString(bin.takeError());
    return make_error(ErrorCode::InvalidInput, "cannot read its symbol table: " + why, name);
  }
  std::vector<StateVariable> vars;
  if (auto *e = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(bin->get()))
    vars = read_elf(*e, load_base);
  else if (auto *e32 = llvm::dyn_cast<llvm::object::ELF32LEObjectFile>(bin->get()))
    vars = read_elf(*e32, load_base);
  else
    return vars; // no state on other formats yet (hotlink/state.h)
  if (vars.empty())
    return vars;
  // The layouts, read from the debug info once per artifact: reading it
  // is most of what state adds to a reload of code built with -g, and an
  // engine alternating two versions, or reloading one it had before,
  // reloads the same bytes.
  static base::Memo<std::string, std::vector<std::string>> layouts(64);
  std::string key = identity.empty() ? "blake3:" + trust::blake3_hex(bytes) : identity;
  auto found = layouts.compute_once(key, [&]() -> std::optional<std::vector<std::string>> {
    auto dwarf_ctx = llvm::DWARFContext::create(**bin);
    std::vector<std::string> out;
    for (const StateVariable &v : vars)
      out.push_back(layout_at(*dwarf_ctx, reinterpret_cast<std::uintptr_t>(v.address) - load_base));
    return out;
  });
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
