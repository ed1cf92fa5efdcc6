// An @openai/agents run through taskledger serve, with the real SDK and a
// scripted model (the SDK's ModelProvider; no network). The model breaks the
// pack's policy (a change before verifying the customer), reads the gate's
// reason as the tool result, corrects itself, and the corrected write runs
// exactly once with its idempotency key; a refund is held for an operator and
// runs once after the approval. Everything is then visible through the API.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Agent, Runner, Usage } from "@openai/agents";
import { z } from "zod";

import { TaskledgerClient } from "../dist/index.js";
import { gatedTool } from "../dist/agents.js";
import { startServe } from "./serve.mjs";

let serve;
before(async () => {
  serve = await startServe();
});
after(async () => {
  await serve?.stop();
});

// A model that plays `script`: each step sees the run's input so far and
// returns the items of one response.
function scriptedModel(script) {
  const seen = [];
  const model = {
    async getResponse(request) {
      const items = Array.isArray(request.input) ? request.input : [];
      seen.push(items);
      const step = script[seen.length - 1];
      if (!step) throw new Error(`the script has no step ${seen.length}`);
      return { usage: new Usage(), responseId: `r${seen.length}`, output: step(items) };
    },
    async *getStreamedResponse() {
      throw new Error("not streamed");
    },
  };
  return { provider: { getModel: async () => model }, seen };
}

const callItem = (callId, name, args) => ({
  type: "function_call",
  callId,
  name,
  arguments: JSON.stringify(args),
  status: "completed",
});
const say = (text) => ({
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});
const resultOf = (items, callId) =>
  items.find((i) => i.type === "function_call_result" && i.callId === callId)?.output;
const textOf = (output) => (typeof output === "string" ? output : (output?.text ?? JSON.stringify(output)));

function subscriptionTools(client, conversation, applied) {
  const common = { client, conversation };
  return [
    gatedTool({
      ...common,
      name: "verify_identity",
      description: "Verify the customer's identity.",
      parameters: z.object({ customer: z.string() }),
      execute: async () => ({ verified: true }),
    }),
    gatedTool({
      ...common,
      name: "downgrade_subscription",
      description: "Move the subscription to another plan.",
      parameters: z.object({ plan: z.string() }),
      execute: async ({ plan }, gate) => {
        applied.push({ tool: "downgrade_subscription", key: gate.idempotencyKey });
        return { plan, status: "downgraded" };
      },
    }),
    gatedTool({
      ...common,
      name: "refund_subscription",
      description: "Refund an amount to the customer.",
      parameters: z.object({ amount: z.number() }),
      execute: async ({ amount }, gate) => {
        applied.push({ tool: "refund_subscription", key: gate.idempotencyKey });
        return { refunded: amount };
      },
    }),
  ];
}

test("a blocked call's reason reaches the model and the corrected write runs once", async () => {
  const client = new TaskledgerClient({ url: serve.url });
  const { conversation } = await client.open();
  await client.message(conversation, "please move me to the basic plan");
  const applied = [];
  const { provider, seen } = scriptedModel([
    () => [callItem("call-1", "downgrade_subscription", { plan: "basic" })],
    (items) => {
      // The model reads why: it verifies first, as the reason says.
      assert.match(textOf(resultOf(items, "call-1")), /verify_identity first/);
      return [callItem("call-2", "verify_identity", { customer: "ana" })];
    },
    () => [callItem("call-3", "downgrade_subscription", { plan: "basic" })],
    (items) => {
      assert.match(textOf(resultOf(items, "call-3")), /downgraded/);
      return [say("Done: you are on the basic plan.")];
    },
  ]);
  const agent = new Agent({
    name: "support",
    instructions: "Help with subscriptions.",
    tools: subscriptionTools(client, conversation, applied),
  });
  const runner = new Runner({ modelProvider: provider, tracingDisabled: true });
  const result = await runner.run(agent, "please move me to the basic plan");
  assert.equal(result.finalOutput, "Done: you are on the basic plan.");
  assert.equal(seen.length, 4);

  // The write ran once, with the command's idempotency key.
  assert.equal(applied.length, 1);
  const { commands } = await client.commands(conversation);
  assert.equal(commands.length, 1);
  assert.equal(commands[0].state, "succeeded");
  assert.equal(commands[0].tool, "downgrade_subscription");
  assert.equal(applied[0].key, commands[0].idempotency_key);

  // The denial is on record with its rule.
  await client.endTurn(conversation);
  const { decisions } = await client.decisions(conversation);
  const denied = decisions.filter((d) => JSON.stringify(d).includes("subscription.identity_verified"));
  assert.ok(denied.length >= 1, JSON.stringify(decisions));
  const block = await client.render(conversation, "plain");
  assert.match(block.state_block, /identity_verified/);
});

test("a refund is held for an operator and runs once after the approval", async () => {
  const client = new TaskledgerClient({ url: serve.url });
  const { conversation } = await client.open();
  const applied = [];
  const tools = subscriptionTools(client, conversation, applied);
  const agent = new Agent({ name: "support", instructions: "Refunds.", tools });
  const first = scriptedModel([
    () => [callItem("v-1", "verify_identity", { customer: "ana" })],
    () => [callItem("r-1", "refund_subscription", { amount: 30 })],
    (items) => {
      assert.match(textOf(resultOf(items, "r-1")), /approval/);
      return [say("Your refund waits for a billing operator.")];
    },
  ]);
  await new Runner({ modelProvider: first.provider, tracingDisabled: true }).run(agent, "refund 30");
  assert.equal(applied.length, 0);
  const held = (await client.commands(conversation, "blocked")).commands;
  assert.equal(held.length, 1);

  await client.approve(conversation, held[0].command_key, "customer is known", "bob");

  const second = scriptedModel([
    () => [callItem("r-2", "refund_subscription", { amount: 30 })],
    (items) => {
      assert.match(textOf(resultOf(items, "r-2")), /refunded/);
      return [say("Refunded.")];
    },
  ]);
  await new Runner({ modelProvider: second.provider, tracingDisabled: true }).run(agent, "and now?");
  assert.equal(applied.length, 1);
  assert.equal(applied[0].key, held[0].idempotency_key);
  const done = (await client.commands(conversation, "succeeded")).commands;
  assert.equal(done.length, 1);
});

test("errors carry the service's code and status", async () => {
  const client = new TaskledgerClient({ url: serve.url });
  await assert.rejects(client.propose("", { id: "x", tool: "t" }), (e) => {
    assert.equal(e.name, "TaskledgerError");
    assert.equal(e.status, 400);
    return true;
  });
  const nowhere = new TaskledgerClient({ url: "http://127.0.0.1:1", timeoutMs: 2000 });
  await assert.rejects(nowhere.open(), (e) => e.code === "unreachable" && e.status === 0);
  // A second URL takes over when the first cannot be reached.
  const failover = new TaskledgerClient({ url: ["http://127.0.0.1:1", serve.url] });
  const { conversation } = await failover.open();
  assert.ok(conversation.length > 0);
});
