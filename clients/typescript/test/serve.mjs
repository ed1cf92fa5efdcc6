// Starts a real `taskledger serve` for the tests: TASKLEDGER_CLI is the
// binary, TASKLEDGER_ROOT the repository (for rules/), and
// TASKLEDGER_TEST_REDIS_URL, when set, the store (else the memory store).
// Resolves once the service printed its whole listening line.
import { spawn } from "node:child_process";
import path from "node:path";

export const root = process.env.TASKLEDGER_ROOT ?? path.resolve(import.meta.dirname, "../../..");
const cli = process.env.TASKLEDGER_CLI ?? path.join(root, "build/cli/taskledger");

export function startServe({ rules = "subscription", store, extra = [] } = {}) {
  const args = ["serve", "--rules", path.join(root, "rules", rules), "--listen", "127.0.0.1:0"];
  const url = store ?? process.env.TASKLEDGER_TEST_REDIS_URL;
  if (url) args.push("--store", url);
  args.push(...extra);
  const child = spawn(cli, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`taskledger serve did not start in 10 s:\n${stderr}`));
    }, 10_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`taskledger serve exited with ${code}:\n${stderr}`));
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      // Only a whole line: a cut one would give a wrong port.
      const line = stderr.split("\n").slice(0, -1).find((l) => l.includes("listening on "));
      const m = line?.match(/listening on (http:\/\/[^\s,]+)/);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      resolve({
        url: m[1],
        stderr: () => stderr,
        stop: () =>
          new Promise((done) => {
            child.on("exit", done);
            child.kill("SIGTERM");
          }),
      });
    });
  });
}
