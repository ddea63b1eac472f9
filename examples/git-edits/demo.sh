#!/bin/sh
# Runs examples/git-edits on a fresh copy of examples/git-edits/repo (a git repository of its own),
# then shows what was merged. Usage, from the a2a checkout: sh examples/git-edits/demo.sh
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(mktemp -d "${TMPDIR:-/tmp}/a2a-git-edits-XXXXXX")
cp -R "$here/repo/." "$repo"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@localhost commit -q -m "greet: initial"
npx a2a run "$here" --workspace "$repo" --no-tree
echo
git -C "$repo" log --oneline --graph
git -C "$repo" diff --stat HEAD~2 HEAD 2>/dev/null || true
echo "repository: $repo"
