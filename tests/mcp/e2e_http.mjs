// End-to-end over Streamable HTTP: the official MCP TypeScript SDK's
// StreamableHTTPClientTransport talks to `taskledger mcp-proxy --listen`
// gating @modelcontextprotocol/server-filesystem on stdio; then a second
// proxy reaches the first as its HTTP upstream (`--upstream`), with the SDK's
// stdio client in front of it, so both sides of the transport are exercised
// in every combination the proxy offers.
//   node e2e_http.mjs TASKLEDGER RULES STORE_URL WORKDIR
// Run from the folder holding node_modules (run_e2e.sh copies it there).
// Prints one line per check and "N passed, M failed"; exits 1 on a failure.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { z } from "zod";
import { check, finish, listen, rules, serverEntry, store, taskledger, text, workdir } from "./e2e_common.mjs";

const prefix = `e2e-http-${process.pid}-${Date.now()}`;
const token = `t-${process.pid}-${Math.random().toString(36).slice(2)}`;

// Whatever goes wrong, no proxy is left running (it would keep node alive).
const children = [];
const bail = (e) => {
  console.log(`FAIL ${e && e.stack ? e.stack : e}`);
  if (e && e.cause) console.log(`     cause: ${e.cause.code || ""} ${e.cause.message || e.cause}`);
  // A moment for a crashed proxy's report (a sanitizer's, say) to reach stderr.
  setTimeout(() => {
    for (const c of children) c.kill("SIGKILL");
    process.exit(1);
  }, 3000);
};
process.on("uncaughtException", bail);
process.on("unhandledRejection", bail);

function stop(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on("exit", (code) => resolve(code));
    child.kill("SIGTERM");
  });
}

const seeded = path.join(workdir, "notes.txt");
fs.writeFileSync(seeded, "original notes\n");

const front = await listen(["--rules", rules, "--store", store, "--conversation", prefix,
                            "--listen", "127.0.0.1:0", "--require-token", token,
                            "--", "node", serverEntry, workdir]);
children.push(front.child);

await check("requests without the bearer token are refused with 401 and reach nothing", async () => {
  const r = await fetch(front.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
                           params: { protocolVersion: "2025-06-18", capabilities: {},
                                     clientInfo: { name: "x", version: "1" } } }),
  });
  assert.equal(r.status, 401);
  assert.match(r.headers.get("www-authenticate") || "", /Bearer/);
});

await check("a foreign Origin is refused with 403 (DNS rebinding)", async () => {
  const r = await fetch(front.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json",
               authorization: `Bearer ${token}`, origin: "http://evil.example" },
    body: "{}",
  });
  assert.equal(r.status, 403);
});

const transport = new StreamableHTTPClientTransport(new URL(front.url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const http = new Client({ name: "taskledger-e2e-http", version: "1.0.0" });
await http.connect(transport);
const conversation = `${prefix}-${transport.sessionId}`;

await check("the SDK's Streamable HTTP client initializes through the proxy and gets a session", async () => {
  assert.match(transport.sessionId || "", /^[0-9a-f]{32}$/);
  const caps = http.getServerCapabilities();
  assert.ok(caps.tools && caps.resources && caps.prompts);
  const names = (await http.listTools()).tools.map((t) => t.name);
  assert.ok(names.includes("read_text_file") && names.includes("write_file"));
});

await check("a read passes over HTTP with the file's content", async () => {
  const r = await http.callTool({ name: "read_text_file", arguments: { path: seeded } });
  assert.notEqual(r.isError, true, text(r));
  assert.equal(text(r), "original notes\n");
});

await check("a policy-breaking write comes back isError and never reaches the server", async () => {
  await http.callTool({ name: "list_allowed_directories", arguments: {} });
  const secret = path.join(workdir, ".env");
  const r = await http.callTool({ name: "write_file", arguments: { path: secret, content: "TOKEN=stolen" } });
  assert.equal(r.isError, true);
  assert.match(text(r), /fs\.no_hidden_paths/);
  assert.equal(fs.existsSync(secret), false, ".env was not created");
});

await check("the session's state resource shows what this session learned", async () => {
  const state = await http.readResource({ uri: "taskledger://state" });
  assert.ok(state.contents[0].text.includes("fs.allowed_directory."), state.contents[0].text);
});

// A second client gets a session (and a conversation) of its own.
const otherTransport = new StreamableHTTPClientTransport(new URL(front.url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const other = new Client({ name: "taskledger-e2e-http-2", version: "1.0.0" });
await other.connect(otherTransport);

await check("a second MCP session is a separate conversation: it has not listed the directory", async () => {
  assert.notEqual(otherTransport.sessionId, transport.sessionId);
  const state = await other.readResource({ uri: "taskledger://state" });
  assert.ok(!state.contents[0].text.includes("fs.allowed_directory."), state.contents[0].text);
});

await check("DELETE ends the session; its id is then unknown (404)", async () => {
  const id = otherTransport.sessionId;
  await otherTransport.terminateSession();
  const r = await fetch(front.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json",
               authorization: `Bearer ${token}`, "mcp-session-id": id },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
  });
  assert.equal(r.status, 404);
});
await other.close();

// The proxy as an HTTP client: a stdio proxy whose server is the first proxy.
const chainPrefix = `${prefix}-chain`;
const chained = new Client({ name: "taskledger-e2e-chain", version: "1.0.0" });
await chained.connect(new StdioClientTransport({
  command: taskledger,
  args: ["mcp-proxy", "--rules", rules, "--store", store, "--conversation", chainPrefix,
         "--upstream", front.url, "--upstream-token", token],
  stderr: "inherit",
}));

await check("--upstream: a stdio proxy in front of an HTTP MCP server relays reads", async () => {
  const names = (await chained.listTools()).tools.map((t) => t.name);
  assert.ok(names.includes("read_text_file"), names.join(","));
  const r = await chained.callTool({ name: "read_text_file", arguments: { path: seeded } });
  assert.notEqual(r.isError, true, text(r));
  assert.equal(text(r), "original notes\n");
});

await check("--upstream: the stdio proxy gates writes itself before anything goes out", async () => {
  const secret = path.join(workdir, ".npmrc");
  const r = await chained.callTool({ name: "write_file", arguments: { path: secret, content: "x" } });
  assert.equal(r.isError, true);
  assert.match(text(r), /fs\.no_hidden_paths/);
  assert.equal(fs.existsSync(secret), false);
});

await check("--upstream with a wrong token: the upstream's 401 comes back as an error, no crash", async () => {
  const bad = new Client({ name: "taskledger-e2e-bad", version: "1.0.0" });
  await assert.rejects(bad.connect(new StdioClientTransport({
    command: taskledger,
    args: ["mcp-proxy", "--rules", rules, "--store", store, "--upstream", front.url,
           "--upstream-token", "wrong"],
    stderr: "ignore",
  })), /401/);
  await bad.close().catch(() => {});
});
await chained.close();
await http.close();

// The SDK's own Streamable HTTP server as the upstream: one read tool and one
// write tool (names the mcp-filesystem pack knows), sessions by the SDK.
const sdkCalls = [];
const sdkTransports = {};
const sdkServer = createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  const sid = req.headers["mcp-session-id"];
  let t = sid && sdkTransports[sid];
  if (!t) {
    t = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => { sdkTransports[id] = t; },
    });
    const server = new McpServer({ name: "sdk-http-upstream", version: "1.0.0" });
    server.registerTool("read_text_file", { inputSchema: { path: z.string() } }, async ({ path: p }) => {
      sdkCalls.push(["read_text_file", p]);
      return { content: [{ type: "text", text: `sdk says: ${p}` }] };
    });
    server.registerTool("write_file", { inputSchema: { path: z.string(), content: z.string() } },
                        async ({ path: p }) => {
      sdkCalls.push(["write_file", p]);
      return { content: [{ type: "text", text: "written" }] };
    });
    await server.connect(t);
  }
  await t.handleRequest(req, res, body ? JSON.parse(body) : undefined);
});
await new Promise((resolve) => sdkServer.listen(0, "127.0.0.1", resolve));
const sdkUrl = `http://127.0.0.1:${sdkServer.address().port}/mcp`;
const viaSdk = new Client({ name: "taskledger-e2e-sdk-upstream", version: "1.0.0" });
await viaSdk.connect(new StdioClientTransport({
  command: taskledger,
  args: ["mcp-proxy", "--rules", rules, "--store", store, "--upstream", sdkUrl],
  stderr: "inherit",
}));

await check("--upstream to the SDK's StreamableHTTPServerTransport: a read is relayed (SSE answers)", async () => {
  const r = await viaSdk.callTool({ name: "read_text_file", arguments: { path: "/srv/a.txt" } });
  assert.notEqual(r.isError, true, text(r));
  assert.equal(text(r), "sdk says: /srv/a.txt");
});

await check("--upstream to the SDK server: a policy-breaking write is blocked and never sent", async () => {
  const r = await viaSdk.callTool({ name: "write_file", arguments: { path: "/srv/.env", content: "x" } });
  assert.equal(r.isError, true);
  assert.match(text(r), /fs\.no_hidden_paths/);
  assert.deepEqual(sdkCalls.map((c) => c[0]), ["read_text_file"]);
});
await viaSdk.close();
sdkServer.close();

await check("the listener stops on SIGTERM with exit 0", async () => {
  assert.equal(await stop(front.child), 0);
});

await check("taskledger audit reads the HTTP session's calls from its own conversation", async () => {
  const out = execFileSync(taskledger, ["audit", "calls", conversation, "--store", store, "--json"], { encoding: "utf8" });
  const calls = JSON.parse(out).calls;
  const shown = JSON.stringify(calls.map((c) => [c.tool, c.outcome, c.rule]));
  const writes = calls.filter((c) => c.tool === "write_file");
  assert.equal(writes.length, 1, shown);
  assert.equal(writes[0].outcome, "denied", shown);
  assert.equal(writes[0].rule, "fs.no_hidden_paths", shown);
  assert.equal(calls.filter((c) => c.tool === "read_text_file").length, 1, shown);
});

finish();
