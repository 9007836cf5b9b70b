// The nvptx platform's engine: a planned Job handed to nvJitLink instead of
// lld (platform.h's Engine). The job's arguments are nvJitLink's options
// (-arch=sm_NN), its inputs (scratch files of the job, or paths) and
// "-o OUT"; the cubin comes back as the job's artifact.
#include "linker/platforms/nvptx/cubin.h"
#include "linker/platforms/nvptx/images.h"
#include "linker/platforms/nvptx/nvjitlink.h"
#include "linker/platforms/table.h"

#include "base/clock.h"
#include "exports/fatbin.h"
#include "exports/ptx.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace hotlink::detail {

namespace {

nvjitlink::InputKind kind_of(const std::vector<std::uint8_t> &b) {
  if (b.size() >= 8 && std::memcmp(b.data(), "!<arch>\n", 8) == 0)
    return nvjitlink::InputKind::Library;
  if (exports::looks_like_ptx(b.data(), b.size()))
    return nvjitlink::InputKind::Ptx;
  if (exports::looks_like_fatbin(b.data(), b.size()))
    return nvjitlink::InputKind::Fatbin;
  if (exports::looks_like_lto_ir(b.data(), b.size()))
    return nvjitlink::InputKind::LtoIr;
  // A cubin (EM_CUDA) is nvJitLink's CUBIN; its OBJECT is a host object
  // carrying a fat binary, from which it would link nothing of a cubin.
  if (cubin::is_cubin(b.data(), b.size()))
    return nvjitlink::InputKind::Cubin;
  return nvjitlink::InputKind::Object;
}

// clang -fgpu-rdc's host object, whose offload section nvJitLink does
// not read: the image the link's architecture takes (images.h), as its
// own input. false (with `why`) when it holds none.
bool offload_image(nvjitlink::Input &in, const std::vector<std::string> &options, std::string &why) {
  auto images = exports::carried_offload_images(in.bytes.data(), in.bytes.size(), in.name);
  if (!images) {
    why = images.error().to_string();
    return false;
  }
  if (images->empty())
    return true; // nvcc's, which nvJitLink takes whole
  unsigned sm = 0;
  for (const std::string &o : options)
    if (o.rfind("-arch=", 0) == 0)
      sm = nvptx::sm_number(o.substr(6));
  nvptx::Choice chosen = nvptx::choose_image(*images, sm);
  if (!chosen.image) {
    why = in.name + " carries no image for sm_" + std::to_string(sm) + " (it has " + chosen.has + ")";
    return false;
  }
  in.kind = chosen.image->kind == exports::FatbinImage::Kind::Ptx ? nvjitlink::InputKind::Ptx
                                                                  : nvjitlink::InputKind::Cubin;
  in.bytes = chosen.image->bytes;
  if (in.kind == nvjitlink::InputKind::Ptx)
    in.bytes.push_back(0);
  return true;
}

// The job's inputs as nvJitLink takes them, and its options; false (with
// `why`) when an input cannot be read.
bool gather(const Job &job, std::vector<std::string> &options, std::vector<nvjitlink::Input> &inputs,
            std::string &why) {
  for (std::size_t i = 0; i < job.args.size(); ++i) {
    const Arg &a = job.args[i];
    if (!a.in_workdir && a.before.empty() && a.after.empty())
      continue; // a key alone (nvJitLink's identity)
    if (!a.in_workdir && a.before == "-o") {
      ++i; // the output: returned as the artifact
      continue;
    }
    if (!a.in_workdir && !a.before.empty() && a.before[0] == '-') {
      options.push_back(a.before);
      continue;
    }
    nvjitlink::Input in;
    if (a.in_workdir) {
      auto f = std::find_if(job.files.begin(), job.files.end(), [&](const JobFile &j) { return j.name == a.after; });
      if (f == job.files.end()) {
        why = "the job names a scratch file it does not carry: " + a.after;
        return false;
      }
      in.bytes = f->bytes();
      in.name = a.after; // as the job prints it: the diagnostics map it to the input's name
    } else {
      std::string path = a.before + a.after;
      auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
      if (!buf) {
        why = "cannot read " + path + ": " + buf.getError().message();
        return false;
      }
      in.bytes.assign((*buf)->getBufferStart(), (*buf)->getBufferEnd());
      in.name = path;
    }
    in.kind = kind_of(in.bytes);
    if (in.kind == nvjitlink::InputKind::Ptx && (in.bytes.empty() || in.bytes.back() != 0))
      in.bytes.push_back(0); // nvJitLink reads PTX as a C string: past the end of one without its NUL
    inputs.push_back(std::move(in));
  }
  for (nvjitlink::Input &in : inputs) // the options are all known now
    if (in.kind == nvjitlink::InputKind::Object && !offload_image(in, options, why))
      return false;
  return true;
}

// nvJitLink's error log as lld-style lines ("nvjitlink: error: ..."), which
// the service's diagnostics read: a PTX error's input and line, an
// unresolved reference as an undefined symbol. nvJitLink writes
//   ptxas application ptx input, line 58; error   : Unknown modifier '.x'
//   ERROR NVJITLINK_ERROR_PTX_COMPILE: JIT the PTX (k.ptx)
//   error   : Undefined reference to 'helper' in 'a.ptx'
//   ptxas fatal   : Unresolved extern function '_Z8scale_ofi'
// (an LTO link: one program; `declared_in` names the input that declares
// it).
std::string diagnostics_of(const std::string &log, const std::map<std::string, std::string> &declared_in) {
  std::vector<std::string> lines, pending; // pending: "line N: MSG" of a PTX not yet named
  std::string out;
  std::size_t pos = 0;
  auto trim = [](std::string t) {
    std::size_t b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  while (pos <= log.size()) {
    std::size_t nl = log.find('\n', pos);
    std::string line = log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? log.size() + 1 : nl + 1;
    if (line.rfind("note: ", 0) == 0)
      line = line.substr(6);
    const std::string ptx = "ptxas application ptx input, line ";
    if (line.rfind(ptx, 0) == 0) {
      std::string rest = line.substr(ptx.size());
      std::string number = rest.substr(0, rest.find(';'));
      std::size_t colon = rest.find(':');
      pending.push_back("line " + number + ": " + trim(colon == std::string::npos ? rest : rest.substr(colon + 1)));
      continue;
    }
    if (line.rfind("ERROR ", 0) == 0) {
      std::size_t open = line.rfind('('), close = line.rfind(')');
      std::string input = open != std::string::npos && close > open ? line.substr(open + 1, close - open - 1) : "";
      for (const std::string &p : pending)
        out += "nvjitlink: error: " + input + ": " + p + "\n";
      if (pending.empty() && out.empty())
        out += "nvjitlink: error: " + trim(line.substr(6)) + "\n";
      pending.clear();
      continue;
    }
    const std::string unresolved = "Unresolved extern function '";
    if (std::size_t u = line.find(unresolved); u != std::string::npos) {
      std::string symbol = line.substr(u + unresolved.size());
      symbol = symbol.substr(0, symbol.find('\''));
      auto in = declared_in.find(symbol);
      out += "nvjitlink: error: " + (in == declared_in.end() ? std::string() : in->second) +
             ": undefined symbol: " + symbol + "\n";
      pending.clear();
      continue;
    }
    const std::string undefined = "Undefined reference to '";
    if (std::size_t u = line.find(undefined); u != std::string::npos) {
      std::string rest = line.substr(u + undefined.size());
      std::string symbol = rest.substr(0, rest.find('\''));
      std::size_t in = rest.find(" in '");
      std::string input = in == std::string::npos ? "" : rest.substr(in + 5, rest.find('\'', in + 5) - in - 5);
      out += "nvjitlink: error: " + input + ": undefined symbol: " + symbol + "\n";
    }
  }
  for (const std::string &p : pending)
    out += "nvjitlink: error: " + p + "\n";
  return out;
}

// An LTO link compiles its LTO-IR as one program, and ptxas names an
// unresolved function without the input that calls it: each input's own
// PTX (nvJitLink -lto -ptx on it alone) says which declares it.
std::map<std::string, std::string> declarers(const std::string &log, const std::vector<std::string> &options,
                                             const std::vector<nvjitlink::Input> &inputs) {
  std::map<std::string, std::string> out;
  const std::string unresolved = "Unresolved extern function '";
  std::set<std::string> wanted;
  for (std::size_t at = log.find(unresolved); at != std::string::npos; at = log.find(unresolved, at + 1)) {
    std::size_t b = at + unresolved.size(), e = log.find('\'', b);
    if (e != std::string::npos)
      wanted.insert(log.substr(b, e - b));
  }
  if (wanted.empty())
    return out;
  std::vector<std::string> alone;
  for (const std::string &o : options)
    if (o.rfind("-arch=", 0) == 0 || o == "-lto")
      alone.push_back(o);
  alone.push_back("-ptx");
  for (const nvjitlink::Input &in : inputs) {
    if (in.kind == nvjitlink::InputKind::Library || out.size() == wanted.size())
      continue;
    nvjitlink::Linked one = nvjitlink::link(alone, {in});
    if (!one.ok)
      continue;
    auto m = exports::read_ptx_module(one.ptx.data(), one.ptx.size(), in.name);
    if (!m)
      continue;
    for (const std::string &f : m->extern_functions)
      if (wanted.count(f))
        out.emplace(f, in.name);
  }
  return out;
}

JobOutput run_nvjitlink(const Job &job) {
  JobOutput out;
  auto t0 = base::Clock::now();
  std::vector<std::string> options;
  std::vector<nvjitlink::Input> inputs;
  if (!gather(job, options, inputs, out.setup_error))
    return out;
  nvjitlink::Linked linked = nvjitlink::link(options, inputs);
  out.link_ms = out.lld_ms = base::ms_since(t0);
  if (!linked.failure.empty() && linked.error_log.empty()) {
    out.setup_error = linked.failure;
    return out;
  }
  out.err_text = diagnostics_of(linked.error_log, linked.ok ? std::map<std::string, std::string>()
                                                              : declarers(linked.error_log, options, inputs));
  if (!linked.ok && out.err_text.empty())
    out.err_text = "nvjitlink: error: " + (linked.error_log.empty() ? linked.failure : linked.error_log) + "\n";
  out.out_text = linked.info_log;
  out.ret_code = linked.ok ? 0 : 1;
  out.artifact = std::move(linked.cubin);
  return out;
}

} // namespace

const Engine &nvjitlink_engine() {
  static const Engine e{"nvjitlink", "nvJitLink", run_nvjitlink};
  return e;
}

} // namespace hotlink::detail
