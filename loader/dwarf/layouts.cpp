// libhotlink-dwarf-X.Y.so (dwarf.h): state variables' layouts from an
// image's DWARF, with LLVM's static DWARF and Object libraries, hidden;
// only the entry point leaves the module.
#include "loader/dwarf/dwarf.h"

#include "llvm/DebugInfo/DWARF/DWARFCompileUnit.h"
#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/DebugInfo/DWARF/DWARFDie.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace {

using llvm::DWARFDie;
namespace dwarf = llvm::dwarf;

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

bool layouts(const std::uint8_t *bytes, std::size_t size, const std::uint64_t *addresses, std::size_t count,
             std::vector<std::string> &out, std::string &why) {
  llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char *>(bytes), size), "image");
  auto bin = llvm::object::ObjectFile::createObjectFile(ref);
  if (!bin) {
    why = llvm::toString(bin.takeError());
    return false;
  }
  auto dwarf_ctx = llvm::DWARFContext::create(**bin);
  out.clear();
  for (std::size_t i = 0; i < count; ++i)
    out.push_back(layout_at(*dwarf_ctx, addresses[i]));
  return true;
}

} // namespace

extern "C" __attribute__((visibility("default"))) const hotlink::loader::dwarf::Table *hotlink_dwarf_layouts_v1() {
  static const hotlink::loader::dwarf::Table table{HOTLINK_VERSION_STRING, layouts};
  return &table;
}
