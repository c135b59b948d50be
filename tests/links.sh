#!/usr/bin/env bash
# Every relative link of the tracked Markdown files ([text](path), path relative to the file)
# names a file or folder that git tracks: a curated storeroom or a renamed note must not leave
# a reader at a dead link. make test runs this; it needs python3, not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --git-dir >/dev/null 2>&1 || ! command -v python3 >/dev/null; then
    echo "tests/links.sh skipped: not a git checkout, or no python3"
    exit 0
fi
git ls-files -z '*.md' | python3 -c '
import os, re, subprocess, sys
tracked = set(subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split("\n"))
dirs = {os.path.dirname(f) for f in tracked}
while True:
    more = {os.path.dirname(d) for d in dirs} - dirs
    if not more:
        break
    dirs |= more
bad, n = [], 0
for md in sys.stdin.read().split("\0"):
    if not md:
        continue
    text = open(md, encoding="utf-8", errors="replace").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)   # code blocks hold no links
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        link = m.group(1).split("#")[0]
        if not link or re.match(r"[a-z]+:", link):
            continue
        n += 1
        path = os.path.normpath(os.path.join(os.path.dirname(md), link))
        if path not in tracked and path not in dirs:
            bad.append(f"{md}: {m.group(1)}")
for b in bad:
    print("tests/links.sh: dead link:", b)
print(f"tests/links.sh: {n} relative links, {len(bad)} dead" + ("" if not bad else ": FAILED"))
sys.exit(1 if bad else 0)
'
