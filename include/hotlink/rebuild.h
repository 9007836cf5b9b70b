// Rebuilder: edits to a module's sources reach the running program.
//
//   hotlink::rebuild::Options o;
//   o.compile_commands = "build/compile_commands.json"; // CMake, Ninja, Bear write it
//   o.sources = {"kernels/physics.cpp"};
//   o.request = req;                  // target, exports, libraries (inputs are replaced)
//   hotlink::rebuild::Rebuilder rb(module, service, o); // builds once now, then watches
//   rb.rebuilds(); rb.last_error();
//
// Contract:
// - The constructor compiles every source with the command the database
//   records for it, links the objects in-process (LinkService) and reloads
//   the module; then a thread watches each source and every header its
//   compiler listed (-MD), and does the same for what changed.
// - Only what changed is compiled again: a source whose file or one of whose
//   headers now holds other bytes. Each source's last object stays in
//   memory; every rebuild links all of them. A change that leaves the bytes
//   as they were (a touch, a save without edits) rebuilds nothing.
// - Editors save by writing a temporary and renaming it over the file; that
//   is one rebuild (changes are debounced: the rebuild starts once no change
//   came for `debounce`).
// - A compile error, a refused link or a refused reload keeps the old
//   version serving; last_error() says why (a compile error with the
//   compiler's own "FILE:LINE:COL: error: ..." line) until the next good
//   rebuild clears it.
// - The compiler runs as a process, in the database's directory for that
//   source; its time is the user's. Linux (inotify).
#pragma once

#include "hotlink/error.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hotlink::rebuild {

struct HOTLINK_API Options {
  std::string compile_commands;     // path of compile_commands.json
  std::vector<std::string> sources; // the module's sources, as the database names them
                                    // (absolute, or relative to the working directory)
  LinkRequest request;              // the link's template; the objects are added to its inputs
  std::string name = "module.so";   // the artifact's name in reloads (versions are NAME.vN...)
  std::chrono::milliseconds debounce{10};
};

class HOTLINK_API Rebuilder {
public:
  Rebuilder(loader::HotModule &module, LinkService &service, Options options);
  ~Rebuilder(); // stops watching and joins
  Rebuilder(const Rebuilder &) = delete;
  Rebuilder &operator=(const Rebuilder &) = delete;

  std::uint64_t rebuilds() const { return rebuilds_.load(); } // versions published (the first build included)
  std::uint64_t failures() const { return failures_.load(); } // builds that kept the old version
  std::uint64_t compiles() const { return compiles_.load(); } // compiler runs
  std::optional<Error> last_error() const;
  // Waits until rebuilds() + failures() exceeds `seen` or `timeout` passes;
  // returns whether it did.
  bool wait_past(std::uint64_t seen, std::chrono::milliseconds timeout) const;
  // The files being watched (the sources and their headers), for tools.
  std::vector<std::string> watched() const;

private:
  struct Source;
  void build(const std::set<std::string> &changed_files);
  std::optional<Error> compile(Source &s);
  std::optional<Error> link_and_reload();
  void watch_files();
  void run();
  void finish(std::optional<Error> err);

  loader::HotModule &module_;
  LinkService &service_;
  Options options_;
  std::string scratch_; // objects and depfiles are written here, then read into memory
  std::vector<std::unique_ptr<Source>> sources_;
  std::map<std::string, std::uint64_t> file_hashes_; // watched file -> its bytes' hash at the last compile
  std::atomic<std::uint64_t> rebuilds_{0}, failures_{0}, compiles_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable done_;
  std::optional<Error> last_error_;
  std::vector<std::string> watched_;
  int inotify_ = -1, wake_[2] = {-1, -1};
  std::map<int, std::string> watch_dirs_; // inotify descriptor -> directory
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace hotlink::rebuild
