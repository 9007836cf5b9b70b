// hotlink cache: inspect, check, prune or clear a cache directory.
#include "tools/cli.h"

#include "hotlink/cache.h"

#include <cstdio>

namespace hotlink::cli {

namespace {

// Each action fills `out` (JSON) and `text`; returns the exit code.
int stats_action(hotlink::cache::Cache &cache, Json &out, std::string &text) {
  int rc = kOk;
  hotlink::cache::Stats st = cache.stats();
  std::uint64_t lookups = st.hits + st.misses;
  out["hits"] = st.hits;
  out["misses"] = st.misses;
  out["corrupt"] = st.corrupt;
  out["evictions"] = st.evictions;
  out["stores"] = st.stores;
  out["store_errors"] = st.store_errors;
  out["lock_timeouts"] = st.lock_timeouts;
  out["saved_ms"] = st.saved_ms;
  out["bytes"] = st.bytes;
  out["entries"] = st.entries;
  out["refused"] = st.refused;
  out["remote"] = Json{{"hits", st.remote_hits},       {"misses", st.remote_misses},
                       {"errors", st.remote_errors},   {"refused", st.remote_refused},
                       {"skipped", st.remote_skipped}, {"published", st.published},
                       {"publish_errors", st.publish_errors}};
  std::string rate = lookups ? format("%.1f%%", 100.0 * st.hits / lookups) : std::string("-");
  auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  text = format("cache %s\n  entries       %llu\n  bytes         %llu\n"
                "  hits          %llu\n  misses        %llu\n  hit rate      %s\n"
                "  stores        %llu (%llu failed)\n  corrupt       %llu (removed)\n"
                "  evictions     %llu\n  lock timeouts %llu\n  time saved    %.1f ms\n",
                cache.config().dir.c_str(), u(st.entries), u(st.bytes), u(st.hits), u(st.misses), rate.c_str(),
                u(st.stores), u(st.store_errors), u(st.corrupt), u(st.evictions), u(st.lock_timeouts),
                double(st.saved_ms));
  text += format("  refused       %llu (signature)\n  remote        %llu hits, %llu misses, "
                 "%llu errors, %llu refused, %llu skipped (backoff)\n"
                 "  published     %llu (%llu failed)\n",
                 u(st.refused), u(st.remote_hits), u(st.remote_misses), u(st.remote_errors), u(st.remote_refused),
                 u(st.remote_skipped), u(st.published), u(st.publish_errors));
  return rc;
}

int verify_action(hotlink::cache::Cache &cache, Json &out, std::string &text) {
  int rc = kOk;
  hotlink::cache::VerifyReport r = cache.verify();
  Json bad = Json::array();
  text = format("checked %llu entries: %llu ok, %zu corrupt (removed)\n",
                static_cast<unsigned long long>(r.checked), static_cast<unsigned long long>(r.ok), r.corrupt.size());
  for (const auto &[key, why] : r.corrupt) {
    bad.push_back(Json{{"key", key}, {"reason", why}});
    text += "  " + key + ": " + why + "\n";
  }
  out["checked"] = r.checked;
  out["valid"] = r.ok;
  out["corrupt"] = std::move(bad);
  if (!r.corrupt.empty()) {
    rc = kFailed;
    out["ok"] = false;
  }
  return rc;
}

int prune_action(hotlink::cache::Cache &cache, Json &out, std::string &text) {
  int rc = kOk;
  hotlink::cache::PruneReport r = cache.prune();
  out["evicted"] = r.evicted;
  out["evicted_bytes"] = r.evicted_bytes;
  out["skipped_in_use"] = r.skipped_in_use;
  out["temporaries_removed"] = r.temporaries_removed;
  out["orphans_removed"] = r.orphans_removed;
  out["bytes"] = r.bytes;
  out["entries"] = r.entries;
  auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  text = format("evicted %llu entries (%llu bytes), %llu in use kept; removed %llu "
                "temporaries and %llu partial files; %llu entries, %llu bytes remain\n",
                u(r.evicted), u(r.evicted_bytes), u(r.skipped_in_use), u(r.temporaries_removed),
                u(r.orphans_removed), u(r.entries), u(r.bytes));
  return rc;
}

int clear_action(hotlink::cache::Cache &cache, Json &out, std::string &text) {
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
  Json out{{"dir", cache.config().dir}, {"ok", true}};
  std::string text;
  int rc = action == "stats"    ? stats_action(cache, out, text)
           : action == "verify" ? verify_action(cache, out, text)
           : action == "prune"  ? prune_action(cache, out, text)
                                : clear_action(cache, out, text);
  if (json) {
    print_json(out);
  } else {
    std::fputs(text.c_str(), rc == kOk ? stdout : stderr);
  }
  return rc;
}

} // namespace hotlink::cli
