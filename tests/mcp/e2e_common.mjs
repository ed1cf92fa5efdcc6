// What the e2e scripts (e2e_filesystem.mjs, e2e_http.mjs) share: their
// command line (TASKLEDGER RULES STORE_URL WORKDIR), the path of
// @modelcontextprotocol/server-filesystem's entry point, and the check
// runner: one "ok"/"FAIL" line per check, then finish() prints
// "N passed, M failed" and exits 1 if any failed.
import path from "node:path";
import { createRequire } from "node:module";

export const [taskledger, rules, store, workdir] = process.argv.slice(2);
const require = createRequire(import.meta.url);
export const serverEntry = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/server-filesystem/package.json")), "dist", "index.js");

let passed = 0, failed = 0;
export async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n     ${e && e.stack ? e.stack.split("\n").slice(0, 4).join("\n     ") : e}`);
    // fetch's "fetch failed" hides why (refused, reset, timeout): its cause says.
    if (e && e.cause) console.log(`     cause: ${e.cause.code || ""} ${e.cause.message || e.cause}`);
  }
}

// The text parts of a tool result, joined.
export const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
