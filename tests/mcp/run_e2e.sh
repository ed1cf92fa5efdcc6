#!/bin/sh
# End-to-end test of `taskledger mcp-proxy` (tests/mcp/CMakeLists.txt):
#   run_e2e.sh SOURCE_DIR NPM_DIR TASKLEDGER RULES [SCRIPT]
# Installs the pinned npm packages into NPM_DIR (tests/support/npm_ci.sh),
# uses the redis at $TASKLEDGER_TEST_REDIS_URL or starts a private
# redis-server on a unix socket, and runs SCRIPT (default e2e_filesystem.mjs). Exit 77 (ctest:
# skipped) when node/npm/redis-server is missing or npm cannot install.
set -u
src=$1 npm_dir=$2 taskledger=$3 rules=$4 script=${5:-e2e_filesystem.mjs}

skip() { echo "SKIPPED: $*"; exit 77; }
sh "$(dirname "$0")/../support/npm_ci.sh" "$src" "$npm_dir" "the pinned MCP packages" || exit $?

work=$(mktemp -d /tmp/tl-mcp-e2e.XXXXXX) && work=$(cd "$work" && pwd -P) || exit 1
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

store=${TASKLEDGER_TEST_REDIS_URL:-}
if [ -z "$store" ]; then
  command -v redis-server >/dev/null 2>&1 || skip "redis-server is not installed and TASKLEDGER_TEST_REDIS_URL is not set"
  redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no \
               --dir "$work" --logfile "$work/redis.log" &
  redis_pid=$!
  i=0
  while [ ! -S "$work/redis.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  [ -S "$work/redis.sock" ] || { echo "redis-server did not start"; cat "$work/redis.log"; exit 1; }
  store="unix://$work/redis.sock"
fi

mkdir -p "$work/ws"
cd "$npm_dir" || exit 1
node "$script" "$taskledger" "$rules" "$store" "$work/ws"
