#!/bin/sh
# Installs a folder's pinned npm packages for a test, once per lock file:
#   npm_ci.sh SRC DIR WHAT
# Copies SRC/package.json and SRC/package-lock.json into DIR and runs
# `npm ci` there, unless DIR/node_modules already holds that exact lock
# (kept as node_modules/.taskledger-lock after a successful install). WHAT
# names the packages in the progress line. Exit 77 (ctest: skipped, with
# "SKIPPED: reason") when node or npm is missing or `npm ci` fails (the
# registry unreachable, the install broken); 1 when DIR cannot be made.
# Callers run it as `sh .../npm_ci.sh SRC DIR WHAT || exit $?`.
# Used by tests/mcp/run_e2e.sh and tests/typescript/run_client_tests.sh.
set -u
src=$1 dir=$2 what=$3

skip() { echo "SKIPPED: $*"; exit 77; }
command -v node >/dev/null 2>&1 || skip "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"

mkdir -p "$dir" || exit 1
if ! cmp -s "$src/package-lock.json" "$dir/node_modules/.taskledger-lock" 2>/dev/null; then
  cp "$src/package.json" "$src/package-lock.json" "$dir/" || exit 1
  echo "installing $what into $dir (npm ci)"
  if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error); then
    skip "npm ci failed: the npm registry is unreachable or the install broke (see above)"
  fi
  cp "$src/package-lock.json" "$dir/node_modules/.taskledger-lock"
fi
exit 0
