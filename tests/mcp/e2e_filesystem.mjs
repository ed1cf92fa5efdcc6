// End-to-end: the official MCP TypeScript SDK client talks to
// @modelcontextprotocol/server-filesystem through `taskledger mcp-proxy`
// (rules/mcp-filesystem), and `taskledger audit` reads the same store after.
//   node e2e_filesystem.mjs TASKLEDGER RULES STORE_URL WORKDIR
// Run from the folder holding node_modules (run_e2e.sh copies it there).
// Prints one line per check and "N passed, M failed"; exits 1 on a failure.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, finish, rules, serverEntry, store, taskledger, text, workdir } from "./e2e_common.mjs";

const conversation = `e2e-${process.pid}-${Date.now()}`;

async function connect(command, args) {
  const client = new Client({ name: "taskledger-e2e", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
  return client;
}

const seeded = path.join(workdir, "notes.txt");
fs.writeFileSync(seeded, "original notes\n");

// The server on its own, for comparison with what the proxy hands back.
const direct = await connect("node", [serverEntry, workdir]);
const proxied = await connect(taskledger, [
  "mcp-proxy", "--rules", rules, "--store", store, "--conversation", conversation,
  "--", "node", serverEntry, workdir]);

await check("initialize through the proxy keeps the server's tools and adds resources and prompts", async () => {
  const caps = proxied.getServerCapabilities();
  assert.ok(caps.tools, "tools capability kept");
  assert.ok(caps.resources && caps.prompts, "resources and prompts advertised");
  assert.equal(proxied.getServerVersion().name, direct.getServerVersion().name);
  const names = (await proxied.listTools()).tools.map((t) => t.name);
  for (const t of ["read_text_file", "write_file", "edit_file", "create_directory", "move_file", "list_directory"]) {
    assert.ok(names.includes(t), `tool ${t} listed`);
  }
});

await check("a read-only call passes untouched (same result as without the proxy)", async () => {
  const viaProxy = await proxied.callTool({ name: "read_text_file", arguments: { path: seeded } });
  const plain = await direct.callTool({ name: "read_text_file", arguments: { path: seeded } });
  assert.deepEqual(viaProxy, plain);
  assert.equal(text(viaProxy), "original notes\n");
});

await check("a write that breaks a rule is blocked with its reason and never reaches the server", async () => {
  await proxied.callTool({ name: "list_allowed_directories", arguments: {} });
  const secret = path.join(workdir, ".env");
  const r = await proxied.callTool({ name: "write_file", arguments: { path: secret, content: "TOKEN=stolen" } });
  assert.equal(r.isError, true);
  assert.match(text(r), /fs\.no_hidden_paths/);
  assert.match(text(r), /hidden/);
  assert.equal(fs.existsSync(secret), false, ".env was not created");
});

await check("an overwrite of a file that was not read is blocked; the file keeps its content", async () => {
  const other = path.join(workdir, "todo.txt");
  fs.writeFileSync(other, "keep me\n");
  const r = await proxied.callTool({ name: "write_file", arguments: { path: other, content: "clobbered" } });
  assert.equal(r.isError, true);
  assert.match(text(r), /fs\.no_blind_overwrite/);
  assert.equal(fs.readFileSync(other, "utf8"), "keep me\n");
});

const created = path.join(workdir, "report.txt");
await check("an allowed write goes through once the directory was listed", async () => {
  await proxied.callTool({ name: "list_directory", arguments: { path: workdir } });
  const r = await proxied.callTool({ name: "write_file", arguments: { path: created, content: "written via proxy\n" } });
  assert.notEqual(r.isError, true, text(r));
  assert.equal(fs.readFileSync(created, "utf8"), "written via proxy\n");
  const edit = await proxied.callTool({ name: "edit_file", arguments: {
    path: seeded, edits: [{ oldText: "original", newText: "edited" }] } });
  assert.notEqual(edit.isError, true, text(edit));  // read earlier in this conversation
  assert.equal(fs.readFileSync(seeded, "utf8"), "edited notes\n");
});

await check("the task state is offered as a resource and a prompt", async () => {
  const resources = (await proxied.listResources()).resources;
  assert.ok(resources.some((r) => r.uri === "taskledger://state"));
  const state = await proxied.readResource({ uri: "taskledger://state" });
  const body = state.contents[0].text;
  assert.ok(body.includes(`fs.known.${created}`), body);
  assert.ok(body.includes("fs.allowed_directory."), body);
  const prompts = (await proxied.listPrompts()).prompts;
  assert.ok(prompts.some((p) => p.name === "taskledger_state"));
  const prompt = await proxied.getPrompt({ name: "taskledger_state" });
  assert.ok(prompt.messages[0].content.text.includes(`fs.known.${created}`));
});

await direct.close();
await proxied.close();

await check("taskledger audit reads the calls back from the same store", async () => {
  const out = execFileSync(taskledger, ["audit", "calls", conversation, "--store", store, "--json"], { encoding: "utf8" });
  const calls = JSON.parse(out).calls;
  const shown = JSON.stringify(calls.map((c) => [c.turn, c.tool, c.outcome, c.rule]));
  const writes = calls.filter((c) => c.tool === "write_file");
  assert.equal(writes.length, 3, shown);
  assert.deepEqual(writes.map((c) => c.outcome), ["denied", "denied", "ok"], shown);
  assert.deepEqual(writes.map((c) => c.decision), ["deny", "deny", "allow"], shown);
  assert.deepEqual(writes.slice(0, 2).map((c) => c.rule), ["fs.no_hidden_paths", "fs.no_blind_overwrite"], shown);
  assert.equal(writes[2].arguments.path, created);
  const reads = calls.filter((c) => c.tool === "read_text_file");
  assert.equal(reads.length, 1);
  assert.equal(reads[0].outcome, "ok");
  assert.equal(reads[0].writes, false);
  // One turn per call, plus one before each write that ran: its decision,
  // committed ahead of the call (the session's write-ahead).
  let turn = 0;
  const expected = calls.map((c) => (turn += c.writes && c.outcome !== "denied" ? 2 : 1));
  assert.deepEqual(calls.map((c) => c.turn), expected, shown);
});

await check("the allowed writes are recorded as succeeded commands", async () => {
  const out = execFileSync(taskledger, ["commands", "list", "--run", conversation, "--store", store, "--json"],
                           { encoding: "utf8" });
  assert.match(out, /succeeded/);
  assert.ok(out.includes(created), out);
});

finish();
