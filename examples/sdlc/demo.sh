#!/bin/sh
# Runs examples/sdlc on a fresh git repository (a copy of examples/sdlc/repo), then shows what the
# team merged and runs its tests. Usage, from the a2a checkout: sh examples/sdlc/demo.sh [--json]
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(mktemp -d "${TMPDIR:-/tmp}/a2a-sdlc-XXXXXX")
cp -R "$here/repo/." "$repo"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@localhost commit -q -m "greet: empty project"
npx a2a run "$here" --workspace "$repo" --no-tree "$@"
echo
git -C "$repo" log --oneline --first-parent main
(cd "$repo" && node --test 2>&1 | grep -E '^[#ℹ] (tests|pass|fail)')
echo "repository: $repo"
echo "artifacts:  npx a2a artifacts --workspace $repo"
