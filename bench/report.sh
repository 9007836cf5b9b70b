#!/usr/bin/env bash
# Writes bench/README.md: hotlink against the ld.lld and cc processes and
# LLVM ORC at three object sizes, worker throughput and the hot-module call
# overhead, all from one run, with the machine described.
#   usage: bench/report.sh   (after ./run build; takes about two minutes)
# Run it on an otherwise idle machine: every figure is a median of this run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/README.md
tables=$(mktemp)
direct=$(mktemp)
loader=$(mktemp)
startup=$(mktemp)
trap 'rm -f "$tables" "$direct" "$loader" "$startup"' EXIT

build/bin/compare_bench --markdown "$tables" >&2
build/bin/direct_bench --markdown "$direct" >&2
build/bin/loader_bench --benchmark_filter='Call|Reload' >"$loader" 2>&1
build/bin/startup_bench --markdown "$startup" >&2
instructions=$(bench/instructions.sh build)
rebuild=$(build/bin/rebuild_bench 5)
call=$(grep '^call, medians' "$loader")
reloads=$(grep -E '^reload' "$loader" | sed 's/^/    /')

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
{
  echo "# hotlink benchmark report"
  echo
  echo "Written by \`bench/report.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC') from one run;"
  echo "every figure is the median of that run's repetitions (Google Benchmark)."
  echo
  echo "Machine: $cpu, $(nproc) cores, $mem; $(. /etc/os-release && echo "$PRETTY_NAME"),"
  echo "Linux $(uname -r); $(clang-22 --version | head -1); $(ld.lld-22 --version | head -1);"
  echo "$(cc --version | head -1). Scratch files and caches on tmpfs (/dev/shm)."
  echo "The machine is shared: rerun to see the spread."
  echo
  echo "Each path goes from object bytes in memory to a function pointer it"
  echo "called once: hotlink in-process (link + private file + dlopen + dlsym); writing"
  echo "the object and running \`ld.lld-22 -shared\` or \`cc -shared\`, then"
  echo "dlopen + dlsym; LLVM ORC's LLJIT adding the object to a fresh JITDylib of"
  echo "a JIT made once, then looking the symbol up; a hotlink cache hit (link()"
  echo "answered by the cache + private file + dlopen + dlsym). The small kernel is"
  echo "\`kernel\` + \`kernel_argv\`; the ~150 KB object is 400 compiled C"
  echo "functions; the ~20 MB object is 125,000 generated functions that call"
  echo "each other (llvm-mc)."
  echo
  echo "### Never slower than lld used directly"
  echo
  echo "From \`build/bin/direct_bench\`: hotlink's user path (object bytes to a \`HotModule\`"
  echo "serving the new version and a first call through its entry) against lld used the way"
  echo "Triton's AMD backend and ROCm's comgr use it (the object written to a temporary file,"
  echo "\`lld::lldMain\` with \`--threads=1\`, the output to a temporary file, dlopen, dlsym, a"
  echo "call), in one process, one link each in turn; then the CLI and a 100,000-function"
  echo "object against their reference processes, alternating. The goal is a ratio of 1.00×"
  echo "or less in every row (0.70× for the in-process many-function link). That bare line"
  echo "(\`ld.lld -shared IN -o OUT\`) links no C library, startup objects or libgcc and"
  echo "gives no \`--eh-frame-hdr\`, so the rows marked \"against lld with \`clang -shared\`'s"
  echo "line\" give lld the line \`clang-22 -shared -fuse-ld=lld\` computes, which is what"
  echo "hotlink's default link makes. A process's first link runs in fresh processes,"
  echo "each path in turn (the service and module made before the clock starts)."
  echo
  cat "$direct"
  echo
  cat "$tables"
  echo
  echo "### Instructions of one warm small link"
  echo
  echo 'Counted by callgrind (`bench/instructions.sh`, 20 warm links, spinning off): the'
  echo "same on a busy machine as on an idle one."
  echo
  echo "$instructions"
  echo
  echo "### Edit to running"
  echo
  echo "From \`build/bin/rebuild_bench\` in the same run: an editor's save (a temporary"
  echo "renamed over \`k.c\`, 40 small functions) until the running HotModule serves the"
  echo "new version (Rebuilder: inotify, the database's compile command, an in-process"
  echo "link, reload with state), against one \`clang-22 -c\` of the same file with the"
  echo "same command, alternating:"
  echo
  echo "$rebuild"
  echo
  echo "### Start-up of a process that only loads"
  echo
  echo "From \`build/bin/startup_bench\` in the same run: whole processes that use an"
  echo "artifact without linking it (what a JIT's every start after the first, or a"
  echo "shipped game, pays), each against a process that dlopens the same file:"
  echo
  cat "$startup"
  echo
  echo "### Hot-module call overhead"
  echo
  echo "From \`build/bin/loader_bench\` in the same run (single thread):"
  echo
  echo "    $call"
  echo
  echo "### Reload: forwarding to many kept versions, and state under load"
  echo
  echo "From \`build/bin/loader_bench\` in the same run: a reload with forwarding"
  echo "off and on (16 replaced versions of a small kernel, 200 of a 41-function one,"
  echo "each re-pointed at every reload), and a reload of a Box2D plugin built with"
  echo "\`-g\` while two threads step worlds in pinned batches of four frames, with"
  echo "and without a \`HOTLINK_STATE\` variable:"
  echo
  echo "$reloads"
} >"$out"
echo "wrote $out" >&2
