// Internal. A hotlink-ld worker process, spoken to over two pipes with
// length-prefixed frames (wire.cpp). One job at a time.
#pragma once

#include "hotlink/error.h"
#include "linker/job.h"

#include <chrono>
#include <memory>
#include <string>

namespace hotlink::detail {

class Worker {
public:
  // Starts `exe --worker`. Errors name the executable.
  static Expected<std::unique_ptr<Worker>> start(const std::string &exe);
  ~Worker(); // kills the process if it still runs

  // Runs one job. A crash, a timeout or a garbled reply is an Error and
  // leaves the worker dead (alive() == false).
  Expected<JobOutput> run(const Job &job, std::chrono::milliseconds timeout);
  bool alive() const { return alive_; }

private:
  Worker() = default;
  struct Process;
  std::unique_ptr<Process> proc_;
  bool alive_ = false;
  std::string reply_; // kept (up to 4 MiB): the next reply's frame reuses its pages
};

// The hotlink-ld to start: `configured` if set, else $HOTLINK_WORKER, else
// hotlink-ld beside the running executable, else the build tree's and the
// install prefix's bin directories.
std::string find_worker(const std::string &configured);

// The worker's main loop over stdin/stdout (used by hotlink-ld).
int worker_main();

} // namespace hotlink::detail
