#include "hotlink/forward.h"

#include "loader/code_write.h"
#include "loader/decoder/decoder.h"
#include "loader/pairing.h"
#include "loader/version_image.h"

#include "image/image.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#include <unordered_map>

namespace hotlink::loader {

ForwardImage::~ForwardImage() {
#if !defined(_WIN32)
  if (fd >= 0)
    ::close(fd);
  if (slots)
    ::munmap(slots, slots_bytes);
#endif
}

namespace {

constexpr std::uint32_t kNearJump = 5;  // jmp rel32
constexpr std::uint32_t kFarJump = 14;  // jmp [rip+0]; .quad target
constexpr std::uint32_t kShortJump = 2; // jmp rel8
constexpr std::uint32_t kSlotJump = 6;  // jmp [rip+rel32], to the function's slot
constexpr std::size_t kMaxListed = 32;

// --- Decoding: how many first bytes of a function may be replaced --------------

// LLVM's x86 disassembler, in a module loaded on the first forward
// (decoder/decoder.h). Only called once forwarding_unavailable() said it
// loaded.
const decoder::Table &decoder() { return *decoder::x86().value(); }

// --- Reading the functions -----------------------------------------------------

// Every function of the image's symbol table that forwarding may patch
// (image::read_elf_symbols), at its mapped address; `room` gets, for
// each, the bytes from its start to the next symbol of its section or the
// section's end (what padding after it may hold).
std::vector<ForwardFunction> mapped_functions(const image::Functions &read, std::uintptr_t base,
                                              std::vector<std::uint64_t> &room) {
  std::vector<ForwardFunction> out;
  room.clear();
  for (const image::Function &f : read.functions) {
    ForwardFunction m;
    m.name = f.name;
    m.unit = f.unit;
    m.address = base + f.address;
    m.size = f.size;
    m.file_offset = f.file_offset;
    out.push_back(std::move(m));
    room.push_back(f.room);
  }
  return out;
}

void decide_patchable(ForwardFunction &f, std::uint64_t room) {
  const auto *code = reinterpret_cast<const std::uint8_t *>(f.address);
  // Up to 16 bytes: the function's own, and for a short one the padding
  // after it (restored with them).
  std::memcpy(f.original, code, std::min<std::uint64_t>(std::max(f.size, room), sizeof f.original));
  f.patchable = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(decoder().first_hazard(code, f.size, f.why_not), sizeof f.original));
  if (f.patchable == f.size && f.why_not.empty())
    f.why_not = "it is " + std::to_string(f.size) + " bytes long";
  if (f.size >= kNearJump || f.patchable < kShortJump || f.patchable < f.size)
    return;
  // Short: a near jump in the padding after it, reached by a short jump.
  if (room >= f.size + kNearJump && f.size + kNearJump <= sizeof f.original &&
      decoder().padding(code + f.size, kNearJump, room - f.size))
    f.pad_at = static_cast<std::uint32_t>(f.size);
  else
    f.why_not += ", with no padding after it that can hold one";
}

// The version's file, opened for writing (its mode is read-only).
Expected<int> open_for_writing(const std::string &path, const std::string &name) {
#if defined(_WIN32)
  return make_error(ErrorCode::LoadFailed, "forwarding runs on Linux hosts only", name, path);
#else
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || ::chmod(path.c_str(), st.st_mode | S_IWUSR) != 0)
    return make_error(ErrorCode::LoadFailed, "cannot make its image writable for forwarding: " + path + ": " +
                                                 std::strerror(errno), name);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  int e = errno;
  ::chmod(path.c_str(), st.st_mode);
  if (fd < 0)
    return make_error(ErrorCode::LoadFailed, "cannot open its image for forwarding: " + path + ": " + std::strerror(e),
                      name);
  return fd;
#endif
}

// A table of `count` slots within 2 GiB of every byte of `ranges` (the
// image's segments): tried just after the image, then just before it, a
// few places each; null when none is free.
std::uintptr_t *place_slots(const std::vector<ImageRange> &ranges, std::size_t count, std::size_t &bytes) {
#if defined(_WIN32)
  (void)ranges, (void)count, (void)bytes;
  return nullptr;
#else
  if (ranges.empty() || count == 0)
    return nullptr;
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  std::uintptr_t lo = ranges.front().start, hi = ranges.front().end;
  for (const ImageRange &r : ranges) {
    lo = std::min(lo, r.start);
    hi = std::max(hi, r.end);
  }
  bytes = (count * sizeof(std::uintptr_t) + page - 1) / page * page;
  const std::uintptr_t reach = std::uintptr_t{1} << 31;
  for (int k = 0; k < 32; ++k) {
    std::uintptr_t step = static_cast<std::uintptr_t>(k / 2) * 16 * page;
    std::uintptr_t at = k % 2 == 0 ? (hi + page - 1) / page * page + step : (lo / page * page) - bytes - step;
    if (at < page || at + bytes > lo + reach - kSlotJump || hi > at + reach)
      continue; // out of reach of some instruction (or below the first page)
    void *got = ::mmap(reinterpret_cast<void *>(at), bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED)
      continue;
    if (reinterpret_cast<std::uintptr_t>(got) == at)
      return static_cast<std::uintptr_t *>(got);
    ::munmap(got, bytes); // a kernel without MAP_FIXED_NOREPLACE took it as a hint
  }
  return nullptr;
#endif
}

// --- Planning the writes ---------------------------------------------------------

// A near jump at `at` to `to`, when within 2 GiB.
bool near_jump(std::uintptr_t at, std::uintptr_t to, std::uint8_t *out) {
  auto rel = static_cast<long long>(to) - static_cast<long long>(at + kNearJump);
  if (rel < INT32_MIN || rel > INT32_MAX)
    return false;
  auto r = static_cast<std::int32_t>(rel);
  out[0] = 0xE9;
  std::memcpy(out + 1, &r, 4);
  return true;
}

// The bytes that make `f` reach `to` from its start, and how many: a near
// jump, a far one beyond 2 GiB, or, for a function shorter than a jump, a
// short jump to a near jump in the padding after it (its own bytes in
// between unchanged). More than 16 when it cannot.
std::uint32_t encode_jump(const ForwardFunction &f, std::uintptr_t to, std::uint8_t *out) {
  if (f.pad_at && f.patchable < kNearJump) {
    if (!near_jump(f.address + f.pad_at, to, out + f.pad_at))
      return kFarJump + f.pad_at; // too far for the padding's near jump
    out[0] = 0xEB;
    out[1] = static_cast<std::uint8_t>(f.pad_at - kShortJump);
    std::memcpy(out + kShortJump, f.original + kShortJump, f.pad_at - kShortJump);
    return f.pad_at + kNearJump;
  }
  if (near_jump(f.address, to, out))
    return kNearJump;
  const std::uint8_t far[6] = {0xFF, 0x25, 0, 0, 0, 0};
  std::memcpy(out, far, 6);
  std::uint64_t abs = to;
  std::memcpy(out + 6, &abs, 8);
  return kFarJump;
}

// `jmp [rip+slot]` at the start of `f`, when `slot` is within reach.
bool slot_jump(const ForwardFunction &f, const std::uintptr_t *slot, std::uint8_t *out) {
  auto rel = static_cast<long long>(reinterpret_cast<std::uintptr_t>(slot)) -
             static_cast<long long>(f.address + kSlotJump);
  if (f.patchable < kSlotJump || rel < INT32_MIN || rel > INT32_MAX)
    return false;
  auto r = static_cast<std::int32_t>(rel);
  out[0] = 0xFF;
  out[1] = 0x25;
  std::memcpy(out + 2, &r, 4);
  return true;
}

// The bytes a patch of `f` covers now (0: none).
std::uint32_t patched_length(const ForwardFunction &f) {
  if (!f.target)
    return 0;
  if (f.through_slot)
    return kSlotJump;
  std::uint8_t scratch[32];
  return encode_jump(f, f.target, scratch);
}

struct Planned {
  ForwardFunction *function;
  std::uintptr_t to;           // 0: its own code back
  std::uintptr_t *slot = nullptr; // set: the jump goes through it (holding `to` already)
};

CodeWrite make_write(const ForwardImage &image, const Planned &p) {
  const ForwardFunction &f = *p.function;
  CodeWrite w;
  w.fd = image.fd;
  w.offset = f.file_offset;
  w.address = f.address;
  std::uint32_t now = patched_length(f);
  std::uint32_t jump = 0;
  std::memcpy(w.bytes, f.original, sizeof w.bytes);
  if (p.slot)
    jump = slot_jump(f, p.slot, w.bytes) ? kSlotJump : 0;
  else if (p.to)
    jump = encode_jump(f, p.to, w.bytes);
  w.length = static_cast<std::uint8_t>(std::max(now, jump));
  return w;
}

std::string why_kept(CodeWrite::Status status, int error) {
  switch (status) {
  case CodeWrite::Status::Busy:
    return "a thread stayed inside its first bytes";
  case CodeWrite::Status::NotVisible:
    return "its code page is a private copy (a debugger's breakpoint?)";
  case CodeWrite::Status::Failed:
    return std::string("writing its image failed: ") + std::strerror(error);
  default:
    return "it was not written";
  }
}

// Writes the plan; records where each function jumps now. Returns what
// stopped the threads from being stopped, or "".
std::string apply(std::vector<Planned> &plan, const std::vector<const ForwardImage *> &owners,
                  std::vector<std::string> &failures) {
  if (plan.empty())
    return {};
  std::vector<CodeWrite> writes;
  writes.reserve(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i)
    writes.push_back(make_write(*owners[i], plan[i]));
  std::string why = write_code_parked(writes);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (writes[i].status == CodeWrite::Status::Done) {
      plan[i].function->target = plan[i].to;
      plan[i].function->through_slot = plan[i].slot != nullptr;
    } else if (why.empty())
      failures.push_back(plan[i].function->name + ": " + why_kept(writes[i].status, writes[i].error));
  }
  return why;
}

void list(ForwardReport &report, const std::string &what) {
  ++report.kept;
  if (report.kept_reasons.size() < kMaxListed)
    report.kept_reasons.push_back(what);
}

using Pairs = std::vector<std::pair<const ForwardFunction *, const ForwardFunction *>>;

// Where each function of the version just replaced has its counterpart in
// the target, by its address.
using Moves = std::unordered_map<std::uintptr_t, const ForwardFunction *>;

// `other`'s functions paired with `target`'s. A version that points at the
// version just replaced, every function of it (as every older one does
// after the reload before), is paired through `moves`: the same pairing,
// without pairing its names again.
Pairs pairs_for(const ForwardImage &other, const ForwardImage &target, const Moves &moves) {
  Pairs out;
  out.reserve(other.functions.size());
  for (const ForwardFunction &f : other.functions) {
    auto it = f.target ? moves.find(f.target) : moves.end();
    if (it == moves.end() || it->second->name != f.name || it->second->unit != f.unit)
      return pair_up(other.functions, target.functions);
    out.emplace_back(&f, it->second);
  }
  return out;
}

// What forward_to does to `other`: a slot to store, or a jump to write, for
// each counterpart that fits.
struct Work {
  std::vector<Planned> plan;
  std::vector<const ForwardImage *> owners;
  struct Store {
    ForwardFunction *function;
    std::uintptr_t *slot;
    std::uintptr_t to;
  };
  std::vector<Store> stores; // functions already jumping through their slots
};

void plan_image(ForwardImage &other, ForwardImage &target, const Pairs &pairs, bool listed, ForwardReport &report,
                Work &work) {
  for (auto [o, t] : pairs) {
    if (!o)
      continue;
    auto *f = const_cast<ForwardFunction *>(o);
    if (!t) {
      if (listed)
        list(report, f->name + ": version " + std::to_string(target.number) + " has no function of that name");
      continue;
    }
    if (f->target == t->address)
      continue;
    std::uintptr_t *slot = other.slots ? other.slots + (f - other.functions.data()) : nullptr;
    if (f->through_slot) {
      work.stores.push_back({f, slot, t->address});
      continue;
    }
    std::uint8_t scratch[32];
    if (slot && slot_jump(*f, slot, scratch)) {
      __atomic_store_n(slot, t->address, __ATOMIC_RELEASE); // read once the jump is written
      work.plan.push_back({f, t->address, slot});
      work.owners.push_back(&other);
      continue;
    }
    std::uint32_t need = encode_jump(*f, t->address, scratch);
    if (need > (f->pad_at ? f->pad_at + kNearJump : f->patchable)) {
      if (listed)
        list(report, f->name + ": a jump needs " + std::to_string(need) + " bytes, and " + f->why_not);
      continue;
    }
    work.plan.push_back({f, t->address});
    work.owners.push_back(&other);
  }
}

} // namespace

Expected<std::unique_ptr<ForwardImage>> forward_image(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                      const Library &lib, std::uint64_t number) {
  if (std::string why = forwarding_unavailable(); !why.empty())
    return make_error(ErrorCode::LoadFailed, why, name);
  if (image::kind_of(bytes.data(), bytes.size()) != image::Kind::Elf)
    return make_error(ErrorCode::LoadFailed, "forwarding patches x86_64 ELF images only", name);
  auto table = read_symbol_table(bytes, name, /*forwarding=*/true);
  if (!table)
    return table.take_error();
  return forward_image_of(table->code, name, lib, number);
}

Expected<std::unique_ptr<ForwardImage>> forward_image_of(const image::Functions &read, const std::string &name,
                                                         const Library &lib, std::uint64_t number) {
  if (std::string why = forwarding_unavailable(); !why.empty())
    return make_error(ErrorCode::LoadFailed, why, name);
  if (!read.wide || read.arch != exports::Arch::X86_64)
    return make_error(ErrorCode::LoadFailed, "forwarding patches x86_64 ELF images only", name);
  auto fd = open_for_writing(lib.path(), name);
  if (!fd)
    return fd.take_error();
  auto image = std::make_unique<ForwardImage>();
  image->number = number;
  image->path = lib.path();
  image->fd = fd.value();
  image->ranges = lib.ranges();
  std::vector<std::uint64_t> room;
  image->functions = mapped_functions(read, lib.base(), room);
  for (std::size_t i = 0; i < image->functions.size(); ++i)
    decide_patchable(image->functions[i], room[i]);
  image->slots = place_slots(image->ranges, image->functions.size(), image->slots_bytes);
  return image;
}

ForwardReport forward_to(ForwardImage &target, const std::vector<ForwardImage *> &others) {
  ForwardReport report;
  Work work;
  for (ForwardFunction &f : target.functions)
    if (f.target) { // it was forwarded before a rollback: its own code again
      work.plan.push_back({&f, 0});
      work.owners.push_back(&target);
    }
  // Reasons are listed for the newest other version: the one replaced.
  const ForwardImage *replaced = nullptr;
  for (ForwardImage *o : others)
    if (!replaced || o->number > replaced->number)
      replaced = o;
  Moves moves;
  if (replaced)
    for (auto [o, t] : pair_up(replaced->functions, target.functions))
      if (o && t)
        moves.emplace(o->address, t);
  for (ForwardImage *o : others)
    plan_image(*o, target, o == replaced ? pair_up(o->functions, target.functions) : pairs_for(*o, target, moves),
               o == replaced, report, work);
  std::vector<std::string> failures;
  report.unavailable = apply(work.plan, work.owners, failures);
  // Functions that jump through their slots already: one store each, seen
  // by the next call through it (a call that read the old slot a moment
  // before runs the version replaced, still mapped).
  if (report.unavailable.empty())
    for (const Work::Store &st : work.stores) {
      __atomic_store_n(st.slot, st.to, __ATOMIC_RELEASE);
      st.function->target = st.to;
    }
  for (const std::string &f : failures)
    list(report, f);
  for (ForwardImage *o : others)
    for (const ForwardFunction &f : o->functions)
      report.forwarded += f.target && within(target.ranges, f.target);
  return report;
}

bool unforward_from(const ForwardImage &gone, const std::vector<ForwardImage *> &others) {
  Work work;
  for (ForwardImage *o : others)
    for (ForwardFunction &f : o->functions)
      if (f.target && within(gone.ranges, f.target)) {
        work.plan.push_back({&f, 0});
        work.owners.push_back(o);
      }
  std::vector<std::string> failures;
  std::string why = apply(work.plan, work.owners, failures);
  return why.empty() && failures.empty();
}

std::string forwarding_unavailable() {
#if defined(__linux__) && defined(__x86_64__)
  if (auto table = decoder::x86(); !table)
    return "LLVM's x86_64 disassembler is not available: " + table.error().to_string();
  return parking_unavailable();
#else
  return "forwarding runs on Linux x86_64 hosts only";
#endif
}

} // namespace hotlink::loader
