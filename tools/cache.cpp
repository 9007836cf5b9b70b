// hotlink cache: inspect, check, prune or clear a cache directory.
#include "tools/cli.h"

#include "hotlink/cache.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace hotlink::cli {

namespace {

// Each action fills `out` (JSON) and `text`; returns the exit code.
int stats_action(hotlink::cache::Cache &cache, llvm::json::Object &out, std::string &text) {
  int rc = kOk;
  hotlink::cache::Stats st = cache.stats();
  std::uint64_t lookups = st.hits + st.misses;
  out["hits"] = static_cast<std::int64_t>(st.hits);
  out["misses"] = static_cast<std::int64_t>(st.misses);
  out["corrupt"] = static_cast<std::int64_t>(st.corrupt);
  out["evictions"] = static_cast<std::int64_t>(st.evictions);
  out["stores"] = static_cast<std::int64_t>(st.stores);
  out["store_errors"] = static_cast<std::int64_t>(st.store_errors);
  out["lock_timeouts"] = static_cast<std::int64_t>(st.lock_timeouts);
  out["saved_ms"] = st.saved_ms;
  out["bytes"] = static_cast<std::int64_t>(st.bytes);
  out["entries"] = static_cast<std::int64_t>(st.entries);
  out["refused"] = static_cast<std::int64_t>(st.refused);
  out["remote"] = llvm::json::Object{
      {"hits", static_cast<std::int64_t>(st.remote_hits)},
      {"misses", static_cast<std::int64_t>(st.remote_misses)},
      {"errors", static_cast<std::int64_t>(st.remote_errors)},
      {"refused", static_cast<std::int64_t>(st.remote_refused)},
      {"skipped", static_cast<std::int64_t>(st.remote_skipped)},
      {"published", static_cast<std::int64_t>(st.published)},
      {"publish_errors", static_cast<std::int64_t>(st.publish_errors)}};
  text = llvm::formatv("cache {0}\n  entries       {1}\n  bytes         {2}\n"
                       "  hits          {3}\n  misses        {4}\n  hit rate      {5}\n"
                       "  stores        {6} ({7} failed)\n  corrupt       {8} (removed)\n"
                       "  evictions     {9}\n  lock timeouts {10}\n  time saved    {11:f1} ms\n",
                       cache.config().dir, st.entries, st.bytes, st.hits, st.misses,
                       lookups ? llvm::formatv("{0:f1}%", 100.0 * st.hits / lookups).str()
                               : std::string("-"),
                       st.stores, st.store_errors, st.corrupt, st.evictions, st.lock_timeouts, st.saved_ms)
             .str();
  text += llvm::formatv("  refused       {0} (signature)\n  remote        {1} hits, {2} misses, "
                        "{3} errors, {4} refused, {5} skipped (backoff)\n"
                        "  published     {6} ({7} failed)\n",
                        st.refused, st.remote_hits, st.remote_misses, st.remote_errors,
                        st.remote_refused, st.remote_skipped, st.published, st.publish_errors)
              .str();
  return rc;
}

int verify_action(hotlink::cache::Cache &cache, llvm::json::Object &out, std::string &text) {
  int rc = kOk;
  hotlink::cache::VerifyReport r = cache.verify();
  llvm::json::Array bad;
  text = llvm::formatv("checked {0} entries: {1} ok, {2} corrupt (removed)\n", r.checked, r.ok,
                       r.corrupt.size())
             .str();
  for (const auto &[key, why] : r.corrupt) {
    bad.push_back(llvm::json::Object{{"key", key}, {"reason", why}});
    text += "  " + key + ": " + why + "\n";
  }
  out["checked"] = static_cast<std::int64_t>(r.checked);
  out["valid"] = static_cast<std::int64_t>(r.ok);
  out["corrupt"] = std::move(bad);
  if (!r.corrupt.empty()) {
    rc = kFailed;
    out["ok"] = false;
  }
  return rc;
}

int prune_action(hotlink::cache::Cache &cache, llvm::json::Object &out, std::string &text) {
  int rc = kOk;
  hotlink::cache::PruneReport r = cache.prune();
  out["evicted"] = static_cast<std::int64_t>(r.evicted);
  out["evicted_bytes"] = static_cast<std::int64_t>(r.evicted_bytes);
  out["skipped_in_use"] = static_cast<std::int64_t>(r.skipped_in_use);
  out["temporaries_removed"] = static_cast<std::int64_t>(r.temporaries_removed);
  out["orphans_removed"] = static_cast<std::int64_t>(r.orphans_removed);
  out["bytes"] = static_cast<std::int64_t>(r.bytes);
  out["entries"] = static_cast<std::int64_t>(r.entries);
  text = llvm::formatv("evicted {0} entries ({1} bytes), {2} in use kept; removed {3} "
                       "temporaries and {4} partial files; {5} entries, {6} bytes remain\n",
                       r.evicted, r.evicted_bytes, r.skipped_in_use, r.temporaries_removed,
                       r.orphans_removed, r.entries, r.bytes)
             .str();
  return rc;
}

int clear_action(hotlink::cache::Cache &cache, llvm::json::Object &out, std::string &text) {
  int rc = kOk;
  if (auto err = cache.clear()) {
    out["ok"] = false;
    out["error"] = error_json(*err);
    rc = kFailed;
    text = "hotlink: " + err->to_string() + "\n";
  } else {
    text = "cleared " + cache.config().dir + "\n";
  }
  return rc;
}

} // namespace

int cache(int argc, char **argv) {
  Command cmd("cache", "hotlink cache stats|verify|prune|clear --dir DIR [options]", R"(  stats    counters (hits, misses, corrupt entries, evictions, stores) kept by
           every process using DIR, and its size now
  verify   read every entry fully and check it against its manifest; corrupt
           entries are removed (exit 1 if any was found)
  prune    enforce the limits below (least recently used first) and remove
           temporaries and partial entries left by killed processes
  clear    remove every entry

Each action only inspects: a DIR that is not a cache is an error and nothing
is created (`hotlink link --cache DIR` makes one).)",
              "exit codes: 0 done, 1 corrupt entries found (verify) or an entry stayed in\n"
              "use (clear), 2 bad usage or a directory that is not a safe cache.");
  hotlink::cache::Config config;
  std::string action, max_bytes;
  std::optional<unsigned long> max_entries, max_age;
  bool json = false;
  CLI::App &app = cmd.app;
  app.add_option("action", action, "stats, verify, prune or clear")->type_name("ACTION");
  app.add_option("--dir", config.dir, "the cache directory (required)")->type_name("DIR");
  app.add_option("--max-bytes", max_bytes, "prune: size limit (default 1G; K, M, G suffixes)")->type_name("N");
  app.add_option("--max-entries", max_entries, "prune: entry limit (default: none)")->type_name("N");
  app.add_option("--max-age", max_age, "prune: remove entries unused for longer (default: none)")
      ->type_name("SECONDS");
  app.add_flag("--json", json, "print the result as JSON on stdout");
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  if (action.empty())
    return usage_error("name an action: stats, verify, prune or clear", "cache");
  if (action != "stats" && action != "verify" && action != "prune" && action != "clear")
    return usage_error("unknown cache action '" + action + "' (stats, verify, prune, clear)", "cache");
  if (!max_bytes.empty() && (!parse_size(max_bytes, config.limits.max_bytes) || config.limits.max_bytes == 0))
    return usage_error("--max-bytes takes a size such as 512M, not '" + max_bytes + "'", "cache");
  if (max_entries)
    config.limits.max_entries = *max_entries;
  if (max_age)
    config.limits.max_age = std::chrono::seconds(*max_age);
  if (config.dir.empty())
    return usage_error("missing --dir DIR", "cache");
  config.create = false; // inspecting: a mistyped DIR must not become a cache
  auto opened = hotlink::cache::Cache::open(config);
  if (!opened) {
    int rc = print_error(opened.error(), json);
    return opened.error().code == hotlink::ErrorCode::InputNotFound ? kUsage : rc;
  }
  hotlink::cache::Cache &cache = *opened.value();
  llvm::json::Object out{{"dir", cache.config().dir}, {"ok", true}};
  std::string text;
  int rc = action == "stats"    ? stats_action(cache, out, text)
           : action == "verify" ? verify_action(cache, out, text)
           : action == "prune"  ? prune_action(cache, out, text)
                                : clear_action(cache, out, text);
  if (json) {
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(out))) << "\n";
    llvm::outs().flush();
  } else {
    std::fputs(text.c_str(), rc == kOk ? stdout : stderr);
  }
  return rc;
}

} // namespace hotlink::cli
