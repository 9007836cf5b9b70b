// LinkService: runs link requests, in-process or in worker processes.
//
// Contract:
// - link() and submit() are safe to call from any number of threads.
// - In-process links are serialized: lld has one process-wide context. If
//   lld reports that it cannot run again (after a fatal error), in-process
//   linking is disabled for the rest of the process and later links go to
//   workers; the host keeps running.
// - A worker that crashes or exceeds the request's timeout is killed and
//   yields an error result; the pool starts a new one on demand.
// - The same request gives byte-identical artifacts in-process and in a
//   worker.
// - Constructing one registers LLVM's targets (InitializeAllTargets and
//   the rest) on the constructing thread. LLVM's target registry has no
//   lock: a host that registers targets itself does so before, or on the
//   same thread.
#pragma once

#include "hotlink/cache.h"
#include "hotlink/link.h"

#include <future>
#include <memory>
#include <optional>
#include <vector>
#include <string>

namespace hotlink {

struct HOTLINK_API ServiceConfig {
  unsigned workers = 0;     // worker pool size; 0 = the number of cores less one
                            // (the in-process slot is a lane too), at least 1
  std::string worker_path;  // hotlink-ld; empty = found automatically
  // A cache (hotlink/cache.h) shared with any number of services and
  // processes: a request whose key it holds is answered without lld; a miss
  // is linked once across processes and stored. Null = no cache.
  std::shared_ptr<cache::Cache> cache;
  // In-process links run lld on the calling thread: no hand-off between
  // threads, no thread to wake after the host was idle. lld's thread-local
  // arenas are released after each link, so a thread that links forever
  // keeps nothing of it. A link runs on hotlink's own lld thread instead
  // when its image might not fit in the output pipe (more than ~320 KB of
  // inputs and section alignments: someone must drain the pipe while lld
  // writes), when the calling thread has less than 1 MiB of stack left, or
  // always with this set (a host whose threads must not run lld's code).
  bool lld_on_own_thread = false;
  // Do a link's one-time work in the constructor (lld's first call, the
  // host's runtime environment: clang's driver and the libraries' indexes),
  // by linking a one-function object there: the first link() then costs
  // about what a warm one does, and the constructor ~10 ms more.
  bool warm_up = false;
};

struct HOTLINK_API ServiceStats {
  std::uint64_t in_process = 0; // links run in this process
  std::uint64_t in_worker = 0;  // links run by a worker
  std::uint64_t failed = 0;     // links that returned an error
  std::uint64_t workers_started = 0;
  std::uint64_t workers_lost = 0; // crashed or killed after a timeout
  std::uint64_t cache_hits = 0, cache_misses = 0; // this service's requests
};

// lld resets every LLVM command-line option of the process to its default
// on each call. An in-process link keeps every option the host set (with
// cl::ParseCommandLineOptions or here), of any type: they are out of lld's
// reach for the call. set_host_llvm_options({"-x86-asm-syntax=intel"}) is a
// convenience that parses options now (errors name the option). Note:
// during a link, another host thread looking such an option up by name
// does not find it (its value is untouched); use Execution::Isolated where
// that matters.
HOTLINK_API std::optional<Error> set_host_llvm_options(const std::vector<std::string> &args);

// What a producer given to cache::Cache::get_or_build with a key of the
// caller's returns for a link made without an output path: the bytes, the
// file name, target, exports and COFF companions. A failed link's error is
// returned as is; a link that published to a path is a BadRequest (the
// cache stores bytes).
HOTLINK_API Expected<cache::Artifact> cache_artifact(LinkResult result);

class HOTLINK_API LinkService {
public:
  explicit LinkService(ServiceConfig config = {});
  ~LinkService();
  LinkService(const LinkService &) = delete;
  LinkService &operator=(const LinkService &) = delete;

  LinkResult link(const LinkRequest &request);
  std::future<LinkResult> submit(LinkRequest request);

  // The key under which the service's cache would hold this request's
  // artifact (plans the link: an invalid request returns its error).
  Expected<cache::Key> cache_key(const LinkRequest &request);

  ServiceStats stats() const;

  // False once lld reported that it cannot run again in this process.
  static bool in_process_usable();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace hotlink
