// Internal. A Job is a fully planned lld invocation: every check has been
// made, every decision taken. Executing it needs only a scratch directory,
// so the in-process driver and a worker process run the same Job and
// produce the same bytes.
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace hotlink::detail {

// One argument: before + (in_workdir ? "<workdir>/" : "") + after.
// `key` is what the cache key hashes for it, when not its text: inputs
// are hashed by their bytes, not their names; the thread count not at all.
struct Arg {
  std::string before;
  bool in_workdir = false;
  std::string after;
  std::string key;
};

// A file to create in the workdir before the link. Its bytes are the job's
// own (export lists, support objects, anything decoded from the wire) or
// borrowed from the LinkRequest, which outlives the job: an in-memory input
// of 20 MB is not copied just to be written out again.
class JobFile {
public:
  JobFile() = default;
  static JobFile own(std::string name, std::vector<std::uint8_t> bytes) {
    JobFile f;
    f.name = std::move(name);
    f.owned_ = std::move(bytes);
    return f;
  }
  static JobFile borrow(std::string name, const std::vector<std::uint8_t> &bytes) {
    JobFile f;
    f.name = std::move(name);
    f.borrowed_ = &bytes;
    return f;
  }
  const std::vector<std::uint8_t> &bytes() const { return borrowed_ ? *borrowed_ : owned_; }

  std::string name; // relative to the workdir
  // Whether the cache key hashes its bytes (false for inputs, hashed as
  // inputs, and for runtime stubs, which follow from the inputs and the
  // runtime environment's fingerprints).
  bool keyed = true;

private:
  std::vector<std::uint8_t> owned_;
  const std::vector<std::uint8_t> *borrowed_ = nullptr;
};

struct Job {
  std::string flavor; // argv[0]: ld.lld, lld-link, ld64.lld or wasm-ld
  std::vector<Arg> args;
  // Files to create in the workdir before the link (in-memory inputs,
  // support objects, export lists).
  std::vector<JobFile> files;
  // The inputs' total size plus their sections' alignments (the most
  // padding lld can add for them): what the buffer for lld's output is
  // sized from (an image is usually about this size), and whether the image
  // surely fits in the output pipe (then lld may run on the calling thread;
  // an image that does not fit would block it forever).
  std::uint64_t input_bytes = 0;
  std::string output_name; // lld's output, relative to the workdir
  // Whether the output's name can change the image's bytes (an ELF
  // soname, a DLL's name in its export directory): then it is in the
  // cache key. A platform whose images do not name themselves clears it.
  bool output_name_in_image = true;
  std::string implib_name; // COFF import library to return, if any
  std::string pdb_name;    // COFF PDB to return, if any
  // The platform's lld embeds no input or output path in the image, so
  // the inputs may be memfds and the image may go to a pipe, with no
  // scratch directory (driver.cpp).
  bool in_memory = false;
  // Paths as lld will print them -> the names the user knows them by.
  std::vector<std::pair<std::string, std::string>> display_names;
};

struct JobOutput {
  int ret_code = 1;
  bool can_run_again = true;
  std::string out_text, err_text; // what lld printed, captured
  std::vector<std::uint8_t> artifact;
  std::vector<std::uint8_t> implib;
  std::vector<std::uint8_t> pdb;
  double link_ms = 0;
  double lld_ms = 0; // lld alone, on whichever thread ran it (in-process ELF links)
  // With run_in_process's image_fd, an in-memory link's image went into
  // that file and `artifact` is empty: its size, or the errno of a failed
  // write (the file then holds part of it).
  std::uint64_t image_file_bytes = 0;
  int image_file_errno = 0;
  std::string setup_error; // the scratch dir or output could not be handled
  bool not_run = false;    // in-process lld was already unusable: run elsewhere
};

// A private scratch directory named PREFIX-XXXXXX in $HOTLINK_TMPDIR, else
// /dev/shm, else $TMPDIR, else /tmp; empty (and `error` set) if none can be
// made.
std::string make_scratch(std::string &error, const char *prefix = "hotlink");

// Runs lld in this process under the process-wide lock: on the calling
// thread when the image surely fits in the output pipe and the thread has
// stack to spare, else (or with `on_own_thread`) on hotlink's lld thread
// (see driver.cpp). With `image_fd` (an open file, empty, at offset 0), an
// in-memory job's image is written into that file instead of returned;
// other jobs return it as always.
JobOutput run_in_process(const Job &job, bool on_own_thread = false, int image_fd = -1);

// False once lld reported it cannot run again.
bool in_process_usable();

// Runs `fn` while no in-process link runs: lld walks LLVM's option
// registry, which loading a library that registers options changes.
void while_lld_is_idle(const std::function<void()> &fn);

// Wire format between the service and hotlink-ld: length-prefixed fields.
std::string encode(const Job &job);
bool decode(const std::string &bytes, Job &job);
// A job frame written by another version of hotlink (a mismatched worker).
bool is_job_of_another_version(const std::string &bytes);
std::string encode(const JobOutput &out);
bool decode(const std::string &bytes, JobOutput &out);

} // namespace hotlink::detail
