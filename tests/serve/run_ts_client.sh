#!/bin/sh
# The TypeScript client's tests (clients/typescript/test, node's test runner)
# against the built `taskledger serve`, with the real @openai/agents pinned in
# clients/typescript/package-lock.json (tests/serve/CMakeLists.txt):
#   run_ts_client.sh CLIENT_DIR NPM_DIR TASKLEDGER RULES
# Installs the pinned packages into NPM_DIR (npm ci, once per lock file) and
# copies the client's sources next to them. Exit 77 (ctest: skipped) when
# node/npm is missing or npm cannot install.
set -u
src=$1 npm_dir=$2 taskledger=$3 rules=$4

skip() { echo "SKIPPED: $*"; exit 77; }
command -v node >/dev/null 2>&1 || skip "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || skip "node $major is older than 20"

mkdir -p "$npm_dir" || exit 1
if ! cmp -s "$src/package-lock.json" "$npm_dir/node_modules/.taskledger-lock" 2>/dev/null; then
  cp "$src/package.json" "$src/package-lock.json" "$npm_dir/" || exit 1
  echo "installing the pinned client packages into $npm_dir (npm ci)"
  if ! (cd "$npm_dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error); then
    skip "npm ci failed: the npm registry is unreachable or the install broke (see above)"
  fi
  cp "$src/package-lock.json" "$npm_dir/node_modules/.taskledger-lock"
fi
rm -rf "$npm_dir/src" "$npm_dir/test"
cp -R "$src/src" "$src/test" "$npm_dir/" || exit 1
cd "$npm_dir" || exit 1
TASKLEDGER_CLI=$taskledger TASKLEDGER_RULES=$rules exec node --test test/
