// The service <-> hotlink-ld wire format: each field is a little-endian
// u64 length followed by its bytes, or a u64 number. Decoding checks every
// length against what is left, so a truncated or garbled frame is refused.
#include "linker/job.h"

#include <cstring>

namespace hotlink::detail {

namespace {

struct Writer {
  std::string s;
  void num(std::uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i)
      b[i] = static_cast<char>(v >> (8 * i));
    s.append(b, 8);
  }
  void str(const std::string &v) {
    num(v.size());
    s += v;
  }
  void bytes(const std::vector<std::uint8_t> &v) {
    num(v.size());
    s.append(reinterpret_cast<const char *>(v.data()), v.size());
  }
};

struct Reader {
  const std::string &s;
  std::size_t pos = 0;
  bool ok = true;
  std::uint64_t num() {
    if (!ok || s.size() - pos < 8)
      return ok = false, 0;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= std::uint64_t(static_cast<unsigned char>(s[pos + i])) << (8 * i);
    pos += 8;
    return v;
  }
  // A length-prefixed field, in place: its start, or nullptr (ok cleared)
  // when the frame is shorter than it says.
  const char *field(std::uint64_t &n) {
    n = num();
    if (!ok || n > s.size() - pos)
      return ok = false, n = 0, nullptr;
    const char *p = s.data() + pos;
    pos += n;
    return p;
  }
  std::string str() {
    std::uint64_t n;
    const char *p = field(n);
    return p ? std::string(p, n) : std::string();
  }
  std::vector<std::uint8_t> bytes() { // copied once, straight from the frame
    std::uint64_t n;
    auto *p = reinterpret_cast<const std::uint8_t *>(field(n));
    return p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
  }
  // A count of items that each take at least `min` bytes.
  std::uint64_t count(std::size_t min) {
    std::uint64_t n = num();
    if (ok && n > (s.size() - pos) / min)
      ok = false;
    return ok ? n : 0;
  }
};

// The last byte is the format's version: 2 added Job::input_bytes, 3 the
// PDB (Job::pdb_name, JobOutput::pdb), 4 Job::in_memory.
constexpr std::uint64_t kJobMagic = 0x34626f6a6b6c6800ull;    // "\0hlkjob4"
constexpr std::uint64_t kOutputMagic = 0x3274756f6b6c6800ull; // "\0hlkout2"

} // namespace

std::string encode(const Job &job) {
  Writer w;
  std::size_t files = 0;
  for (const JobFile &f : job.files)
    files += f.bytes().size() + f.name.size() + 16;
  w.s.reserve(files + 64 * job.args.size() + 256); // one allocation, not a doubling series of copies
  w.num(kJobMagic);
  w.str(job.flavor);
  w.num(job.args.size());
  for (const Arg &a : job.args) {
    w.str(a.before);
    w.num(a.in_workdir);
    w.str(a.after);
  }
  w.num(job.files.size());
  for (const JobFile &f : job.files) {
    w.str(f.name);
    w.bytes(f.bytes());
  }
  w.str(job.output_name);
  w.str(job.implib_name);
  w.str(job.pdb_name);
  w.num(job.input_bytes);
  w.num(job.in_memory);
  return std::move(w.s);
}

bool is_job_of_another_version(const std::string &bytes) {
  return bytes.size() >= 8 && bytes.compare(0, 7, std::string("\0hlkjob", 7)) == 0 &&
         static_cast<unsigned char>(bytes[7]) != static_cast<unsigned char>(kJobMagic >> 56);
}

bool decode(const std::string &bytes, Job &job) {
  Reader r{bytes};
  if (r.num() != kJobMagic)
    return false;
  job.flavor = r.str();
  job.args.resize(r.count(24));
  for (Arg &a : job.args) {
    a.before = r.str();
    a.in_workdir = r.num() != 0;
    a.after = r.str();
  }
  job.files.resize(r.count(16));
  for (JobFile &f : job.files) {
    std::string name = r.str();
    f = JobFile::own(std::move(name), r.bytes());
  }
  job.output_name = r.str();
  job.implib_name = r.str();
  job.pdb_name = r.str();
  job.input_bytes = r.num();
  job.in_memory = r.num() != 0;
  return r.ok && r.pos == bytes.size();
}

std::string encode(const JobOutput &out) {
  Writer w;
  w.s.reserve(out.artifact.size() + out.implib.size() + out.pdb.size() + out.out_text.size() + out.err_text.size() +
              out.setup_error.size() + 128);
  w.num(kOutputMagic);
  w.num(static_cast<std::uint32_t>(out.ret_code));
  w.num(out.can_run_again);
  w.str(out.out_text);
  w.str(out.err_text);
  w.bytes(out.artifact);
  w.bytes(out.implib);
  w.bytes(out.pdb);
  std::uint64_t ms;
  static_assert(sizeof ms == sizeof out.link_ms);
  std::memcpy(&ms, &out.link_ms, sizeof ms);
  w.num(ms);
  w.str(out.setup_error);
  w.num(out.not_run);
  return std::move(w.s);
}

bool decode(const std::string &bytes, JobOutput &out) {
  Reader r{bytes};
  if (r.num() != kOutputMagic)
    return false;
  out.ret_code = static_cast<int>(static_cast<std::uint32_t>(r.num()));
  out.can_run_again = r.num() != 0;
  out.out_text = r.str();
  out.err_text = r.str();
  out.artifact = r.bytes();
  out.implib = r.bytes();
  out.pdb = r.bytes();
  std::uint64_t ms = r.num();
  std::memcpy(&out.link_ms, &ms, sizeof ms);
  out.setup_error = r.str();
  out.not_run = r.num() != 0;
  return r.ok && r.pos == bytes.size();
}

} // namespace hotlink::detail
