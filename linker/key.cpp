// The cache key of a planned link (plan.h's link_key): it follows from
// the Job lld will run, so whatever reaches lld is in it by construction.
#include "linker/plan.h"

namespace hotlink::detail {

cache::Key link_key(const Plan &plan) {
  const Job &job = plan.job;
  cache::KeyBuilder k("hotlink link");
  k.add("cache-format", std::uint64_t(2));
  k.add("hotlink", HOTLINK_VERSION_STRING);
  k.add("lld", hotlink::lld_version());
  k.add("target", plan.target.triple);
  k.add("flavor", job.flavor);
  if (job.output_name_in_image)
    k.add("output-name", job.output_name);
  for (const Arg &a : job.args)
    k.add("arg", !a.key.empty() ? a.key : a.before + (a.in_workdir ? "<workdir>/" : "") + a.after);
  for (const JobFile &f : job.files)
    if (f.keyed) {
      k.add("file", f.name);
      k.add_digest("file-bytes", f.bytes().data(), f.bytes().size());
    }
  k.add("inputs", static_cast<std::uint64_t>(plan.input_digests.size()));
  for (const std::string &d : plan.input_digests)
    k.add("input", d);
  for (const std::string &f : plan.fingerprints)
    k.add("fingerprint", f);
  for (const exports::Export &e : plan.exports)
    k.add("export", e.name + "\n" + e.symbol + "\n" + (e.data ? "data" : "code"));
  k.add("implib", std::uint64_t(!job.implib_name.empty()));
  return k.finish();
}

} // namespace hotlink::detail
