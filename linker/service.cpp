#include "hotlink/link_service.h"
#include "base/clock.h"

#include "llvm/ADT/StringRef.h"

#include "linker/llvm_options.h"
#include "linker/plan.h"
#include "exports/targets.h"
#include "linker/worker.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace hotlink {

using namespace detail;

namespace {

void warm_up_links();

// What the cache stores of a result: its bytes are moved out, the rest
// copied; a COFF result's .def is the export file it was linked with.
cache::Artifact take_artifact(LinkResult &result) {
  cache::Artifact a;
  a.bytes = std::move(result.artifact);
  a.implib = std::move(result.implib);
  a.pdb = std::move(result.pdb);
  a.name = result.artifact_name;
  a.target = result.target;
  a.exports = result.exports;
  auto target = detail::resolve_target(result.target);
  if (target && target->export_file_is_companion)
    a.def = result.export_file;
  a.linker_version = lld_version();
  return a;
}


} // namespace

// What a failed run may try again: the platform's revision of the plan
// (while each revision changes something, a few times at most), and lld
// without its error limit (once).
struct Reruns {
  int revisions = 0;
  bool every_error = false;
};

// An artifact that an in-process link writes straight into its reserved
// output file instead of returning its bytes; `written` once it did (a
// worker's link returns bytes, published as always).
struct ImageFile {
  OutputReservation *file = nullptr;
  bool written = false;
};

struct HOTLINK_HIDDEN LinkService::Impl {
  std::string worker_exe;
  unsigned max_workers;
  bool lld_on_own_thread = false;

  // Scheduling: one in-process slot (this service's view of lld's lock) and
  // up to max_workers worker processes.
  mutable std::mutex mu;
  std::condition_variable cv;
  bool in_process_busy = false;
  std::vector<std::unique_ptr<Worker>> idle;
  unsigned live_workers = 0;
  ServiceStats stats;

  // submit(): a queue served by dispatcher threads started on first use.
  std::mutex qmu;
  std::condition_variable qcv;
  std::deque<std::function<void()>> queue;
  std::vector<std::thread> dispatchers;
  bool stopping = false;

  struct Slot {
    bool in_process = false;
    std::unique_ptr<Worker> worker;
  };

  std::shared_ptr<cache::Cache> cache;

  Expected<Slot> acquire(Execution mode, bool needs_worker);
  std::optional<Error> run(const LinkRequest &req, const Plan &plan, LinkResult &res, Reruns reruns = {},
                           ImageFile *image = nullptr);
  std::optional<Error> rerun_after_failure(const LinkRequest &req, const Plan &plan, LinkResult &res,
                                           std::size_t planned, Reruns reruns, int ret_code, ImageFile *image);
  void release(Slot slot);
  LinkResult link(const LinkRequest &req);
  std::optional<Error> link_cached(const LinkRequest &req, const Plan &plan, LinkResult &res);
  void count(const LinkResult &res);
  void dispatch_loop();
};

Expected<LinkService::Impl::Slot>
LinkService::Impl::acquire(Execution mode, bool needs_worker) {
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    bool usable = in_process_usable();
    bool want_in_process = mode != Execution::Isolated && !needs_worker;
    if (want_in_process && usable && !in_process_busy) {
      in_process_busy = true;
      return Slot{true, nullptr};
    }
    bool may_use_worker = mode != Execution::InProcess || !usable || needs_worker;
    if (may_use_worker && !idle.empty()) {
      Slot s{false, std::move(idle.back())};
      idle.pop_back();
      return s;
    }
    if (may_use_worker && live_workers < max_workers) {
      ++live_workers;
      lock.unlock();
      auto w = Worker::start(worker_exe);
      lock.lock();
      if (!w) {
        --live_workers;
        cv.notify_all();
        return w.take_error();
      }
      ++stats.workers_started;
      return Slot{false, std::move(w.value())};
    }
    cv.wait(lock);
  }
}

void LinkService::Impl::release(Slot slot) {
  std::lock_guard<std::mutex> lock(mu);
  if (slot.in_process) {
    in_process_busy = false;
  } else if (slot.worker && slot.worker->alive()) {
    idle.push_back(std::move(slot.worker));
  } else {
    --live_workers;
  }
  cv.notify_all();
}

// Runs the planned link (in-process or in a worker); fills res.artifact
// (or, in-process, `image`'s file), res.implib and lld's diagnostics.
std::optional<Error> LinkService::Impl::run(const LinkRequest &req, const Plan &plan,
                                            LinkResult &res, Reruns reruns, ImageFile *image) {
  const std::size_t planned = res.diagnostics.size(); // planning's, before lld's
  res.command.clear();
  res.command.push_back(plan.job.flavor);
  for (const Arg &a : plan.job.args)
    res.command.push_back(a.before + (a.in_workdir ? "<scratch>/" : "") + a.after);
  JobOutput out;
  for (int attempt = 0;; ++attempt) {
    auto slot = acquire(req.execution, plan.needs_worker);
    if (!slot)
      return slot.take_error();
    if (slot->in_process) {
      res.executed_by = "in-process";
      out = run_in_process(plan.job, lld_on_own_thread, image ? image->file->fd() : -1);
      release(std::move(slot.value()));
      if (out.not_run && attempt == 0)
        continue; // lld became unusable meanwhile: a worker takes it
    } else {
      res.executed_by = "worker";
      auto r = slot->worker->run(plan.job, req.timeout);
      bool lost = !slot->worker->alive() && !r;
      release(std::move(slot.value()));
      if (lost) {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.workers_lost;
      }
      if (!r)
        return r.take_error();
      out = std::move(r.value());
    }
    break;
  }
  res.timings.link_ms = out.link_ms;
  for (Diagnostic &d : parse_diagnostics(plan.job, out.err_text + out.out_text))
    res.diagnostics.push_back(std::move(d));
  if (!out.setup_error.empty())
    return make_error(ErrorCode::OutputError, out.setup_error, {}, {},
                      "check free space in the scratch directory "
                      "(/dev/shm, or set HOTLINK_TMPDIR)");
  if (out.image_file_errno != 0)
    return image->file->write_error(out.image_file_errno);
  if (out.ret_code != 0)
    return rerun_after_failure(req, plan, res, planned, reruns, out.ret_code, image);
  if (image)
    image->written = out.image_file_bytes != 0;
  res.artifact = std::move(out.artifact);
  res.implib = std::move(out.implib);
  res.pdb = std::move(out.pdb);
  return plan.platform ? plan.platform->exports_from_artifact(res.artifact, res.exports) : std::nullopt;
}

// A failed run: again with the platform's revision of the plan (its
// warnings kept), or without lld's error limit when the refusal must name
// every archive member that has an error (paid only by a link that failed
// this way); else the failure, classified.
std::optional<Error> LinkService::Impl::rerun_after_failure(const LinkRequest &req, const Plan &plan,
                                                            LinkResult &res, std::size_t planned, Reruns reruns,
                                                            int ret_code, ImageFile *image) {
  std::vector<Diagnostic> lld_said(res.diagnostics.begin() + static_cast<std::ptrdiff_t>(planned),
                                   res.diagnostics.end());
  Plan again = plan;
  std::vector<Diagnostic> changes;
  if (reruns.revisions < 4 && plan.platform && plan.platform->revise_after_failure(again, lld_said, changes)) {
    res.diagnostics.resize(planned);
    res.diagnostics.insert(res.diagnostics.end(), changes.begin(), changes.end());
    ++reruns.revisions;
    return run(req, again, res, reruns, image);
  }
  if (!reruns.every_error && needs_every_error(lld_said)) {
    again.job.args.push_back(Arg{"--error-limit=0", false, {}, {}});
    res.diagnostics.resize(planned);
    reruns.every_error = true;
    return run(req, again, res, reruns, image);
  }
  return link_error(res.diagnostics, plan, req,
                    linker_name(plan.job.flavor) + " failed (exit code " + std::to_string(ret_code) + ")");
}

namespace {

// What the plan tells the caller, before anything runs.
void report_plan(const Plan &plan, const LinkRequest &req, LinkResult &res) {
  res.target = plan.target.triple;
  res.artifact_name = plan.job.output_name;
  for (const exports::Export &e : plan.exports)
    res.exports.push_back(e.name);
  res.export_file = plan.export_file;
  res.support_objects = plan.support_objects;
  for (const std::string &w : plan.warnings)
    res.diagnostics.push_back(Diagnostic{Severity::Warning, w, req.coff.def_input, {}});
  for (const Diagnostic &d : plan.diagnostics)
    res.diagnostics.push_back(d);
  res.system_libraries = plan.system_libraries;
  res.import_thunks = plan.import_thunks;
  res.windows_crt = plan.windows_crt;
  res.runtime = plan.runtime;
  res.runtime_added = plan.runtime_added;
}

// Every file the link publishes, reserved before lld runs, so that an
// unwritable destination fails early and nothing is published partially.
struct Outputs {
  std::optional<OutputReservation> artifact, def, implib, pdb;
};

Expected<Outputs> reserve_outputs(const LinkRequest &req, const Plan &plan) {
  Outputs o;
  // Artifacts are executable (0755), companions are not (0644); both less
  // the umask.
  for (auto [path, slot, mode] : {std::tuple{&req.output_path, &o.artifact, 0755u},
                                  std::tuple{&req.coff.def_output, &o.def, 0644u},
                                  std::tuple{&req.coff.implib_output, &o.implib, 0644u},
                                  std::tuple{&plan.pdb_path, &o.pdb, 0644u}}) {
    if (path->empty())
      continue;
    auto r = OutputReservation::reserve(*path, mode);
    if (!r)
      return r.take_error();
    slot->emplace(std::move(r.value()));
  }
  return o;
}

// The companions first, the artifact last: whoever sees the artifact can
// rely on its .def, import library and PDB being there.
std::optional<Error> publish(Outputs &o, const LinkRequest &req, const Plan &plan, bool image_written,
                             LinkResult &res) {
  if (o.def) {
    std::vector<std::uint8_t> text(res.export_file.begin(), res.export_file.end());
    if (auto err = o.def->publish(text))
      return err;
    res.def_path = req.coff.def_output;
  }
  if (o.implib) {
    if (auto err = o.implib->publish(res.implib))
      return err;
    res.implib_path = req.coff.implib_output;
    res.implib.clear();
  }
  if (o.pdb) {
    if (auto err = o.pdb->publish(res.pdb))
      return err;
    res.pdb_path = plan.pdb_path;
    res.pdb.clear();
  }
  if (o.artifact) {
    if (auto err = image_written ? o.artifact->commit() : o.artifact->publish(res.artifact))
      return err;
    res.artifact_path = req.output_path;
    res.artifact.clear();
  }
  return std::nullopt;
}

} // namespace

// A hit, or the link run once (across processes) and stored.
std::optional<Error> LinkService::Impl::link_cached(const LinkRequest &req, const Plan &plan, LinkResult &res) {
  auto tc = base::Clock::now();
  double link_total = 0;
  cache::Key key = link_key(plan);
  res.cache_key = key.hex();
  auto fetched = cache->get_or_build(key, [&]() -> Expected<cache::Artifact> {
    auto tl = base::Clock::now();
    auto err = run(req, plan, res);
    link_total = base::ms_since(tl);
    if (err)
      return std::move(*err);
    return take_artifact(res);
  });
  res.timings.cache_ms = base::ms_since(tc) - link_total;
  if (!fetched)
    return fetched.take_error();
  cache::Entry &e = fetched->entry;
  res.cache = fetched->source == cache::Fetched::Source::Remote ? CacheUse::RemoteHit
              : fetched->hit                                     ? CacheUse::Hit
                                                                 : CacheUse::Miss;
  if (fetched->hit)
    res.executed_by = "cache";
  res.cache_stored = !e.artifact_path.empty();
  for (std::string &w : fetched->warnings)
    res.diagnostics.push_back(Diagnostic{Severity::Warning, std::move(w), {}, {}});
  res.artifact = std::move(e.artifact.bytes);
  if (fetched->hit && plan.platform) // what planning could not name, as the miss that stored it had them
    if (auto err = plan.platform->exports_from_artifact(res.artifact, res.exports))
      return err;
  res.implib = std::move(e.artifact.implib);
  res.pdb = std::move(e.artifact.pdb);
  res.artifact_blake3 = e.manifest.blake3;
  return std::nullopt;
}

void LinkService::Impl::count(const LinkResult &res) {
  std::lock_guard<std::mutex> lock(mu);
  if (!res.ok())
    ++stats.failed;
  if (res.executed_by == "worker")
    ++stats.in_worker;
  else if (res.executed_by == "in-process")
    ++stats.in_process;
  if (res.cache == CacheUse::Hit || res.cache == CacheUse::RemoteHit)
    ++stats.cache_hits;
  else if (res.cache == CacheUse::Miss)
    ++stats.cache_misses;
}

LinkResult LinkService::Impl::link(const LinkRequest &req) {
  auto t0 = base::Clock::now();
  LinkResult res;
  auto finish = [&](std::optional<Error> err) {
    res.error = std::move(err);
    res.timings.total_ms = base::ms_since(t0);
    count(res);
    return std::move(res);
  };
  bool caching = cache && req.use_cache;
  // Crash recovery (LLVM's signal handlers, 12 system calls on and off) is
  // on only while LLVM reads untrusted bytes: while planning reads inputs
  // that image/ does not (read_inputs), and while lld runs. A cache hit of
  // the host's own objects turns it on not at all.
  auto plan = plan_link(req, res.timings, /*digest_inputs=*/caching);
  if (!plan)
    return finish(plan.take_error());
  report_plan(*plan, req, res);
  auto outputs = reserve_outputs(req, *plan);
  if (!outputs)
    return finish(outputs.take_error());
  // Without a cache (which stores bytes), an in-process link writes the
  // artifact straight into its output file.
  ImageFile image{outputs->artifact && !outputs->artifact->in_place() ? &*outputs->artifact : nullptr};
  if (auto err = caching ? link_cached(req, *plan, res) : run(req, *plan, res, {}, image.file ? &image : nullptr))
    return finish(std::move(err));
  auto t1 = base::Clock::now();
  if (auto err = publish(*outputs, req, *plan, image.written, res))
    return finish(std::move(err));
  res.timings.publish_ms = base::ms_since(t1);
  return finish(std::nullopt);
}

void LinkService::Impl::dispatch_loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(qmu);
      qcv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return; // stopping, and nothing left to run
      task = std::move(queue.front());
      queue.pop_front();
    }
    task();
  }
}

LinkService::LinkService(ServiceConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->worker_exe = find_worker(config.worker_path);
  impl_->cache = std::move(config.cache);
  // By default one worker fewer than the cores: the in-process slot is a
  // lane of its own (with a worker per core, 64 links submitted at once on
  // 2 cores took 114 ms against 80 ms with one worker, bench/compare_bench).
  unsigned cores = std::thread::hardware_concurrency();
  impl_->max_workers = config.workers ? config.workers : std::max(1u, cores > 1 ? cores - 1 : 1u);
  impl_->lld_on_own_thread = config.lld_on_own_thread;
  // LLVM's target registry is not safe to change while another thread
  // reads it: registered here, on the constructing thread, before any
  // thread of hotlink's (the warm-up, the lld thread) could.
  exports::initialize_llvm_targets();
  if (config.warm_up)
    warm_up_links();
}

LinkService::~LinkService() {
  {
    std::lock_guard<std::mutex> lock(impl_->qmu);
    impl_->stopping = true;
  }
  impl_->qcv.notify_all();
  for (std::thread &t : impl_->dispatchers)
    t.join();
}

Expected<cache::Artifact> cache_artifact(LinkResult result) {
  if (result.error)
    return std::move(*result.error);
  if (!result.artifact_path.empty())
    return make_error(ErrorCode::BadRequest, "the link published its artifact to a path; the cache stores bytes",
                      result.artifact_path, {}, "link without an output path");
  cache::Artifact a = take_artifact(result);
  return a;
}

LinkResult LinkService::link(const LinkRequest &request) {
  return impl_->link(request);
}

std::future<LinkResult> LinkService::submit(LinkRequest request) {
  auto task = std::make_shared<std::packaged_task<LinkResult()>>(
      [this, req = std::move(request)] { return impl_->link(req); });
  std::future<LinkResult> f = task->get_future();
  {
    std::lock_guard<std::mutex> lock(impl_->qmu);
    impl_->queue.push_back([task] { (*task)(); });
    // One dispatcher per possible concurrent link: the in-process slot plus
    // every worker.
    if (impl_->dispatchers.size() < impl_->max_workers + 1)
      impl_->dispatchers.emplace_back([this] { impl_->dispatch_loop(); });
  }
  impl_->qcv.notify_one();
  return f;
}

Expected<cache::Key> LinkService::cache_key(const LinkRequest &request) {
  Timings unused;
  auto plan = plan_link(request, unused, /*digest_inputs=*/true);
  if (!plan)
    return plan.take_error();
  return link_key(plan.value());
}

ServiceStats LinkService::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

std::optional<Error> set_host_llvm_options(const std::vector<std::string> &args) {
  return set_declared_llvm_options(args);
}

bool LinkService::in_process_usable() { return detail::in_process_usable(); }

namespace {

// A link of a one-function object for the host: lld's first call faults its
// code in and sets its one-time state up, and the host's runtime
// environment is computed (clang's driver, the libraries' indexes).
void warm_up_links() {
  auto target = detail::resolve_target("");
  if (!target || !target->platform->warm_up_object)
    return;
  std::vector<std::uint8_t> obj = target->platform->warm_up_object(*target);
  if (obj.empty())
    return;
  LinkRequest req;
  req.inputs.push_back(Input::memory("warm-up.o", std::move(obj)));
  req.exports = ExportPolicy::list({"hotlink_warm_up"});
  Timings unused;
  auto plan = detail::plan_link(req, unused);
  if (plan)
    (void)detail::run_in_process(plan->job);
}

} // namespace

} // namespace hotlink
