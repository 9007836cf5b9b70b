#!/usr/bin/env python3
"""The modules' include graph points one way: no file of a module includes
a module above it, and the linker and the loader (siblings over what they
share) include nothing of each other. Each exception is listed below with
its reason; a new violation fails (prints FILE:LINE and the include)."""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")

# Lowest first. Modules of one rank may not include each other.
RANKS = [
    ["base"],
    ["exports", "trust"],
    ["cache", "verify"],
    ["loader", "linker"],
    ["rebuild"],
    ["tools", "capi", "python"],
]
rank = {m: r for r, mods in enumerate(RANKS) for m in mods}

# "FILE -> MODULE": why it is allowed for now.
EXCEPTIONS = {}

violations = []
used = set()
for module in rank:
    for folder, _, files in os.walk(os.path.join(root, module)):
        for name in files:
            if not name.endswith((".h", ".cpp", ".c")):
                continue
            path = os.path.relpath(os.path.join(folder, name), root)
            with open(os.path.join(root, path), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                    if not m or m.group(1) not in rank or m.group(1) == module:
                        continue
                    target = m.group(1)
                    if rank[target] < rank[module]:
                        continue
                    key = f"{path} -> {target}"
                    if key in EXCEPTIONS:
                        used.add(key)
                        continue
                    violations.append(f"{path}:{number}: includes {target}/ ({line.strip()}), "
                                      f"a module {'beside' if rank[target] == rank[module] else 'above'} {module}/")
for v in violations:
    print(v)
for stale in sorted(set(EXCEPTIONS) - used):
    print(f"include_graph: the exception '{stale}' no longer happens: remove it from the list")
    violations.append(stale)
print(f"include_graph: {len(violations)} violation(s)")
sys.exit(1 if violations else 0)
