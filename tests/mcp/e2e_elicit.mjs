// End-to-end: a rule's confirm(question) put to the user through MCP
// elicitation. The official MCP TypeScript SDK client answers the proxy's
// `elicitation/create` with its ElicitRequestSchema handler; the server is
// @modelcontextprotocol/server-filesystem behind `taskledger mcp-proxy`, over
// stdio and over Streamable HTTP (--listen). The pack (written here) asks
// before every create_directory.
//   node e2e_elicit.mjs TASKLEDGER RULES STORE_URL WORKDIR   (RULES unused)
// Run from the folder holding node_modules (run_e2e.sh copies it there).
// Prints one line per check and "N passed, M failed"; exits 1 on a failure.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, finish, listen, serverEntry, store, taskledger, text, workdir } from "./e2e_common.mjs";

const prefix = `e2e-elicit-${process.pid}-${Date.now()}`;
const pack = path.join(workdir, "..", "confirm-pack");
fs.mkdirSync(pack, { recursive: true });
fs.writeFileSync(path.join(pack, "pack.json"), JSON.stringify({
  name: "e2e-confirm",
  tools: { read_only: ["list_directory", "list_allowed_directories"],
           writes: ["create_directory", "write_file"] },
  unknown_tools: "deny" }));
fs.writeFileSync(path.join(pack, "extract.json"), JSON.stringify({ tools: {} }));
fs.writeFileSync(path.join(pack, "policy.lua"), `
rule {
  id = "e2e.confirm_mkdir",
  tools = {"create_directory"},
  check = function(call, ledger)
    if ledger.confirmed() then return allow() end
    return confirm("Create the directory " .. tostring(call.args.path) .. "?")
  end,
}`);

// A client whose elicitation handler answers from `answers` (one per
// question, in order) and keeps the questions it was asked; with
// `answers` null it declares no elicitation capability at all.
async function connect(transport, answers) {
  const capabilities = answers ? { elicitation: {} } : {};
  const client = new Client({ name: "taskledger-e2e-elicit", version: "1.0.0" }, { capabilities });
  client.asked = [];
  if (answers) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      client.asked.push(request.params);
      const answer = answers.shift();
      if (!answer) throw new Error("asked more often than the test expected");
      return answer;
    });
  }
  await client.connect(transport);
  return client;
}
const stdio = (conversation) => new StdioClientTransport({
  command: taskledger,
  args: ["mcp-proxy", "--rules", pack, "--store", store, "--conversation", conversation,
         "--", "node", serverEntry, workdir],
  stderr: "inherit" });
const yes = { action: "accept", content: { confirm: true } };

function audit(what, conversation) {
  const out = execFileSync(taskledger, ["audit", what, conversation, "--store", store, "--json"],
                           { encoding: "utf8" });
  return JSON.parse(out)[what].filter((c) => c.tool === "create_directory");
}

const conversation = `${prefix}-stdio`;
const answering = await connect(stdio(conversation), [
  yes,
  { action: "accept", content: { confirm: false } },
  { action: "decline" },
  { action: "cancel" }]);

await check("stdio: a yes through elicitation lets the call run, bound to it", async () => {
  const dir = path.join(workdir, "approved");
  const r = await answering.callTool({ name: "create_directory", arguments: { path: dir } });
  assert.notEqual(r.isError, true, text(r));
  assert.equal(fs.existsSync(dir), true, "the directory was created");
  assert.equal(answering.asked.length, 1);
  assert.equal(answering.asked[0].message, `Create the directory ${dir}?`);
  assert.equal(answering.asked[0].requestedSchema.properties.confirm.type, "boolean");
  assert.deepEqual(answering.asked[0].requestedSchema.required, ["confirm"]);
});

for (const [what, why] of [["a no", /answered no/], ["a decline", /declined/],
                           ["a cancel", /dismissed the question/]]) {
  await check(`stdio: ${what} denies the call with the reason; nothing reaches the server`, async () => {
    // The yes above was consumed by its call: each new call is asked again.
    const dir = path.join(workdir, `refused-${what.replace(/\W/g, "")}`);
    const before = answering.asked.length;
    const r = await answering.callTool({ name: "create_directory", arguments: { path: dir } });
    assert.equal(answering.asked.length, before + 1, "asked once");
    assert.equal(r.isError, true);
    assert.match(text(r), why);
    assert.match(text(r), /e2e\.confirm_mkdir/);
    assert.equal(fs.existsSync(dir), false, "the directory was not created");
  });
}
await answering.close();

await check("stdio: the audit shows the confirm decisions and the one call that ran", async () => {
  const made = audit("calls", conversation);
  assert.deepEqual(made.map((c) => c.outcome), ["denied", "ok", "denied", "denied", "denied"],
                   JSON.stringify(made));
  // The yes: a confirm decision, then an allow for the same call; each refusal: a confirm.
  const decided = audit("decisions", conversation);
  const shown = JSON.stringify(decided.map((d) => [d.call_id, d.decision, d.rule]));
  assert.deepEqual(decided.map((d) => d.decision), ["confirm", "allow", "confirm", "confirm", "confirm"], shown);
  assert.equal(decided[0].call_id, decided[1].call_id, shown);
  assert.ok(decided.every((d) => d.rule === "e2e.confirm_mkdir"), shown);
});

await check("stdio: a client without the elicitation capability gets the question as the result", async () => {
  const plain = await connect(stdio(`${prefix}-plain`), null);
  const dir = path.join(workdir, "unasked");
  const r = await plain.callTool({ name: "create_directory", arguments: { path: dir } });
  await plain.close();
  assert.equal(r.isError, true);
  assert.match(text(r), /needs the user's explicit confirmation/);
  assert.match(text(r), /Create the directory/);
  assert.equal(fs.existsSync(dir), false);
});

// Over Streamable HTTP the question rides the session's SSE stream and the
// answer comes back as a POST.
const front = await listen(["--rules", pack, "--store", store, "--conversation", `${prefix}-http`,
                            "--listen", "127.0.0.1:0", "--", "node", serverEntry, workdir]);
try {
  await check("http: a yes and a no through elicitation over the session's stream", async () => {
    const client = await connect(new StreamableHTTPClientTransport(new URL(front.url)),
                                 [yes, { action: "decline" }]);
    const dir = path.join(workdir, "over-http");
    const r = await client.callTool({ name: "create_directory", arguments: { path: dir } });
    assert.notEqual(r.isError, true, text(r));
    assert.equal(fs.existsSync(dir), true);
    const other = path.join(workdir, "over-http-declined");
    const d = await client.callTool({ name: "create_directory", arguments: { path: other } });
    assert.equal(d.isError, true);
    assert.match(text(d), /declined/);
    assert.equal(fs.existsSync(other), false);
    assert.equal(client.asked.length, 2);
    await client.close();
  });
} finally {
  front.child.kill("SIGTERM");
}

finish();
