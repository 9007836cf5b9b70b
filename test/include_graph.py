#!/usr/bin/env python3
"""The modules' include graph points one way: no file of a module includes
a module above it, and the linker and the loader (siblings over what they
share) include nothing of each other. Each exception is listed below with
its reason; a new violation fails (prints FILE:LINE and the include).

The consumers, the CLI (tools/) and the Python package (python/), sit on
the public surface alone: they include hotlink/*.h and their own files,
nothing of a module (the CLI's one exception is listed in CONSUMER_OWN)."""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")

# Lowest first. Modules of one rank may not include each other.
RANKS = [
    ["base"],
    ["exports", "trust"],
    ["image"],
    ["cache", "verify"],
    ["loader", "linker"],
    ["rebuild"],
    ["tools", "capi", "python"],
]
rank = {m: r for r, mods in enumerate(RANKS) for m in mods}

# The public headers (include/hotlink/) belong to the module that
# implements them; hotlink.h (the C API) and state.h (for kernels) to none.
OWNER = {
    "error.h": "base",
    "blake3.h": "trust", "signature.h": "trust",
    "symbols.h": "exports", "export_policy.h": "exports",
    "verify.h": "verify",
    "cache.h": "cache", "remote_cache.h": "cache",
    "load.h": "loader", "state_carry.h": "loader", "forward.h": "loader",
    "hot_module.h": "loader", "cache_entry.h": "loader",
    "link.h": "linker", "link_service.h": "linker", "verify_target.h": "linker",
    "rebuild.h": "rebuild",
    "hotlink.h": None, "state.h": None,
}
public = os.path.join(root, "include", "hotlink")
unowned = sorted(set(os.listdir(public)) - set(OWNER))
if unowned:
    print(f"include_graph: include/hotlink/{unowned[0]} has no owner: add it to OWNER")
    sys.exit(1)


def included_module(line):
    """The module an include line reaches, or None."""
    m = re.match(r'\s*#\s*include\s+[<"]hotlink/([a-z_0-9]+\.h)[>"]', line)
    if m:
        return OWNER.get(m.group(1))
    m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
    return m.group(1) if m and m.group(1) in rank else None


def sources():
    """(path, module) of every file of a module, public headers included."""
    for module in rank:
        for folder, _, files in os.walk(os.path.join(root, module)):
            for name in files:
                if name.endswith((".h", ".cpp", ".c")):
                    yield os.path.relpath(os.path.join(folder, name), root), module
    for name, module in OWNER.items():
        if module:
            yield os.path.join("include", "hotlink", name), module

# "FILE -> MODULE": why it is allowed for now.
EXCEPTIONS = {}

violations = []
used = set()
for path, module in sources():
    with open(os.path.join(root, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            target = included_module(line)
            if target is None or target == module or rank[target] < rank[module]:
                continue
            key = f"{path} -> {target}"
            if key in EXCEPTIONS:
                used.add(key)
                continue
            violations.append(f"{path}:{number}: includes {target}'s {line.strip()}, "
                              f"a module {'beside' if rank[target] == rank[module] else 'above'} {module}/")
# The consumers: only the public headers, their own files and these.
CONSUMERS = ["tools", "python"]
CONSUMER_OWN = {
    # malloc settings of hotlink's own processes, never a library's business
    # (the hotlink-ld worker, part of the linker, sets the same)
    "base/batch_memory.h",
}
for consumer in CONSUMERS:
    for folder, _, files in os.walk(os.path.join(root, consumer)):
        for name in files:
            if not name.endswith((".h", ".cpp", ".c")) or name == "hotlink-ld.cpp":
                continue  # hotlink-ld: the linker's worker process, built from the linker
            path = os.path.relpath(os.path.join(folder, name), root)
            with open(os.path.join(root, path), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1).startswith(("hotlink/", consumer + "/")) or m.group(1) in CONSUMER_OWN:
                        continue
                    violations.append(f"{path}:{number}: includes {m.group(1)}: {consumer}/ uses the public "
                                      f"headers (include/hotlink/) alone")
for v in violations:
    print(v)
for stale in sorted(set(EXCEPTIONS) - used):
    print(f"include_graph: the exception '{stale}' no longer happens: remove it from the list")
    violations.append(stale)
print(f"include_graph: {len(violations)} violation(s)")
sys.exit(1 if violations else 0)
