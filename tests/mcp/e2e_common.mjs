// What the e2e scripts (e2e_filesystem.mjs, e2e_http.mjs, e2e_elicit.mjs) share: their
// command line (TASKLEDGER RULES STORE_URL WORKDIR), the path of
// @modelcontextprotocol/server-filesystem's entry point, and the check
// runner: one "ok"/"FAIL" line per check, then finish() prints
// "N passed, M failed" and exits 1 if any failed; listen() starts a proxy
// that listens on HTTP.
import { spawn } from "node:child_process";
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

// Starts `taskledger mcp-proxy ARGS` and resolves with its URL once it says
// where it listens.
export function listen(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(taskledger, ["mcp-proxy", ...args], { stdio: ["ignore", "inherit", "pipe"] });
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no listening line:\n${seen}`)), 20000);
    child.stderr.on("data", (d) => {
      process.stderr.write(d);
      seen += d;
      // Only a whole line: stderr may arrive cut anywhere ("…http://127.0.0.1" then ":PORT").
      const m = seen.match(/listening on (http:\/\/[^\s,]+)[,\s]/);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1] }); }
    });
    child.on("exit", (code, signal) => {
      // Said at once: a proxy that dies after listening explains every later failure.
      console.log(`mcp-proxy ${args.join(" ").slice(0, 60)}... exited: code ${code}, signal ${signal}`);
      reject(new Error(`mcp-proxy exited with ${code}:\n${seen}`));
    });
  });
}
