#!/bin/sh
# The TypeScript client's tests (clients/typescript) against a real
# `taskledger serve` and the real @openai/agents from npm:
#   run_client_tests.sh CLIENT_DIR WORK_DIR TASKLEDGER ROOT
# Copies the package into WORK_DIR, installs its pinned packages there
# (npm ci, once per lock file), compiles it with tsc, and runs
# `node --test` on its tests. The service uses $TASKLEDGER_TEST_REDIS_URL
# when set, else the memory store. Exit 77 (ctest: skipped) when node/npm
# is missing or npm cannot install; any other failure fails the test.
set -u
client=$1 work=$2 taskledger=$3 root=$4

skip() { echo "SKIPPED: $*"; exit 77; }
command -v node >/dev/null 2>&1 || skip "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"

mkdir -p "$work" || exit 1
if ! cmp -s "$client/package-lock.json" "$work/node_modules/.taskledger-lock" 2>/dev/null; then
  cp "$client/package.json" "$client/package-lock.json" "$work/" || exit 1
  echo "installing the TypeScript client's pinned packages into $work (npm ci)"
  if ! (cd "$work" && timeout 300 npm ci --no-audit --no-fund --loglevel=error); then
    skip "npm ci failed: the npm registry is unreachable or the install broke (see above)"
  fi
  cp "$client/package-lock.json" "$work/node_modules/.taskledger-lock"
fi
rm -rf "$work/src" "$work/test" "$work/dist"
cp -r "$client/src" "$client/test" "$client/tsconfig.json" "$client/package.json" "$work/" || exit 1
cd "$work" || exit 1
npx --no-install tsc -p tsconfig.json || { echo "tsc failed"; exit 1; }
TASKLEDGER_CLI=$taskledger TASKLEDGER_ROOT=$root exec node --test test/*.test.mjs
