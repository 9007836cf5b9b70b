// HotModule's forwarding (hot_module.h, hotlink/forward.h): which mapped
// versions are pointed at the current one and when, so that a pinned call
// runs its own version's code and a kept pointer the current one's.
#include "hotlink/hot_module.h"
#include "loader/module_version.h"

#include <algorithm>
#include <cstdio>

namespace hotlink::loader {

void HotModule::forwarding_off(const std::string &why) {
  if (forwarding_off_.empty())
    std::fprintf(stderr, "hotlink: forward_old_versions is off for this module: %s\n", why.c_str());
  forwarding_off_ = why;
}

// The mapped versions' images but `v`'s. With `pinned`, a version a pin
// holds goes there (its number) instead: its code may not change yet.
std::vector<ForwardImage *> HotModule::forwarded_except(const Version *v, std::vector<std::uint64_t> *pinned) const {
  std::vector<ForwardImage *> out;
  for (const auto &o : versions_) {
    if (o.get() == v || !o->lib || !o->forward)
      continue;
    if (pinned && o->pins.load(std::memory_order_seq_cst) != 0)
      pinned->push_back(o->info.number);
    else
      out.push_back(o->forward.get());
  }
  return out;
}

// A version made current again (a rollback) runs its own code: put back
// before it is published, while no call can pin it.
void HotModule::own_code_again(Version *v) {
  if (!options_.forward_old_versions || !v->forward)
    return;
  ForwardReport r = loader::forward_to(*v->forward, {});
  if (!r.unavailable.empty())
    forwarding_off(r.unavailable);
}

// Points every older mapped version at `target`, which is current now:
// `replaced` once the pinned calls inside it have returned (a pinned batch
// runs one version's code to its end), any other as soon as no pin holds
// it. Those still pinned are forwarded by a later collect(), quiesce() or
// reload().
void HotModule::forward_to(Version *target, Version *replaced) {
  if (!options_.forward_old_versions)
    return;
  if (!target->forward) {
    target->info.forwarding.unavailable = forwarding_off_;
    return;
  }
  if (replaced && replaced->lib && replaced->forward)
    (void)wait_unpinned(replaced);
  std::vector<std::uint64_t> pinned;
  std::vector<ForwardImage *> others = forwarded_except(target, &pinned);
  forward_pending_ = !pinned.empty();
  ForwardReport report = loader::forward_to(*target->forward, others);
  for (std::uint64_t n : pinned) {
    ++report.kept;
    report.kept_reasons.insert(report.kept_reasons.begin(),
                               "version " + std::to_string(n) +
                                   ": a pinned call was still inside it; it is forwarded by the next collect(), "
                                   "quiesce() or reload() after the call returns");
  }
  target->info.forwarding = std::move(report);
  if (!target->info.forwarding.unavailable.empty())
    forwarding_off(target->info.forwarding.unavailable);
}

void HotModule::forward_pending_locked() {
  if (!forward_pending_)
    return;
  Version *cur = current_.load();
  if (!cur || cur == gate() || !cur->forward) {
    forward_pending_ = false;
    return;
  }
  std::vector<std::uint64_t> pinned;
  std::vector<ForwardImage *> others = forwarded_except(cur, &pinned);
  forward_pending_ = !pinned.empty();
  ForwardReport r = loader::forward_to(*cur->forward, others);
  cur->info.forwarding.forwarded = r.forwarded;
  if (!r.unavailable.empty())
    forwarding_off(r.unavailable);
}

std::size_t HotModule::quiesce() {
  std::lock_guard<std::mutex> lock(mu_);
  forward_pending_locked();
  std::vector<Version *> replaced; // the rollback target counts, and stays
  for (auto &v : versions_)
    if ((v->retired || v.get() == previous_) && v->lib && v->forward)
      replaced.push_back(v.get());
  std::sort(replaced.begin(), replaced.end(),
            [](const Version *a, const Version *b) { return a->info.number > b->info.number; });
  std::size_t n = 0;
  for (std::size_t i = options_.forward_keep_versions; i < replaced.size(); ++i) {
    Version *v = replaced[i];
    if (v == previous_ || v->pins.load(std::memory_order_seq_cst) != 0 ||
        v->holds.load(std::memory_order_seq_cst) != 0 || !unforward_from(*v->forward, forwarded_except(v)))
      continue; // still entered or kept, or a jump into it could not be undone: it stays
    unmap_locked(v);
    ++n;
  }
  return n + collect_locked();
}

} // namespace hotlink::loader
