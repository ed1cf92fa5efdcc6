#!/bin/sh
# The TypeScript client's tests (clients/typescript) against a real
# `taskledger serve` and the real @openai/agents from npm:
#   run_client_tests.sh CLIENT_DIR WORK_DIR TASKLEDGER ROOT
# Copies the package into WORK_DIR, installs its pinned packages there
# (tests/support/npm_ci.sh), compiles it with tsc, and runs
# `node --test` on its tests. The service uses $TASKLEDGER_TEST_REDIS_URL
# when set, else the memory store. Exit 77 (ctest: skipped) when node/npm
# is missing or npm cannot install; any other failure fails the test.
set -u
client=$1 work=$2 taskledger=$3 root=$4

sh "$(dirname "$0")/../support/npm_ci.sh" "$client" "$work" "the TypeScript client's pinned packages" ||
  exit $?
rm -rf "$work/src" "$work/test" "$work/dist"
cp -r "$client/src" "$client/test" "$client/tsconfig.json" "$client/package.json" "$work/" || exit 1
cd "$work" || exit 1
npx --no-install tsc -p tsconfig.json || { echo "tsc failed"; exit 1; }
TASKLEDGER_CLI=$taskledger TASKLEDGER_ROOT=$root exec node --test test/*.test.mjs
