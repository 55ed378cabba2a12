#!/usr/bin/env bash
# scripts/commit_id.sh [--full] — the commit a result row names: HEAD's hash (12 digits, or all 40
# with --full), with "-dirty" when a tracked file other than the run's own outputs differs from it.
# The outputs (results/, README.md and the design notes, whose ladder tables a run rewrites) do not
# count: a run replaces the last run's rows before it builds, and those changes are not the code.
# Prints "unknown" outside a git checkout. Used by CMakeLists.txt, torch_baseline.py, sanitize.sh.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
len=12; [ "${1:-}" = --full ] && len=40
head="$(git rev-parse --short="$len" HEAD 2>/dev/null)" || { echo unknown; exit 0; }
[ -n "$head" ] || { echo unknown; exit 0; }
if [ -n "$(git status --porcelain --untracked-files=no -- . ':(exclude)results' ':(exclude)README.md' \
           ':(exclude)docs/*.md' 2>/dev/null)" ]; then
  head="$head-dirty"
fi
echo "$head"
