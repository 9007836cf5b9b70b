#!/usr/bin/env python3
"""Every link in README.md, docs/ and bench/README.md resolves: a relative
path names a file or folder of the repository, and a #fragment names a
heading of its page (GitHub's slugs). Prints each broken link with its page
and line; exits 1 if there is one."""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
pages = ["README.md", "bench/README.md"]
for folder, _, files in os.walk(os.path.join(root, "docs")):
    pages += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".md")]


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)  # GitHub keeps letters, digits, '_', '-' and spaces
    return s.replace(" ", "-")


def anchors(path):
    found, fence = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"#{1,6} (.*)", line)
            if m:
                found.add(slug(re.sub(r"`", "", m.group(1))))
    return found


broken = 0
for page in pages:
    fence = False
    with open(os.path.join(root, page), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:
                path, _, fragment = target.partition("#")
                full = os.path.normpath(os.path.join(root, os.path.dirname(page), path)) if path else os.path.join(root, page)
                if not os.path.exists(full):
                    print(f"{page}:{number}: '{target}': no such file")
                    broken += 1
                elif fragment and os.path.isfile(full) and fragment not in anchors(full):
                    print(f"{page}:{number}: '{target}': no heading '#{fragment}' in {os.path.relpath(full, root)}")
                    broken += 1
print(f"doc_links: {len(pages)} pages, {broken} broken link(s)")
sys.exit(1 if broken else 0)
