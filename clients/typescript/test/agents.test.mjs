// The TypeScript client against a real `taskledger serve` (TASKLEDGER_CLI,
// rules TASKLEDGER_RULES = rules/subscription), and the real OpenAI Agents
// SDK driven by a scripted model (a custom ModelProvider, no network): the
// model asks to cancel before the identity is verified, reads the gate's
// reason in the tool result, verifies, and asks again; the cancellation then
// runs exactly once, with the idempotency key the command ledger gave it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { Agent, Runner, Usage } from '@openai/agents';
import { TaskledgerClient, TaskledgerError } from '../src/index.js';
import { gatedTool } from '../src/agents.js';

const cli = process.env.TASKLEDGER_CLI;
const rules = process.env.TASKLEDGER_RULES;
let server;
let baseUrl;

before(async () => {
  assert.ok(cli && rules, 'set TASKLEDGER_CLI and TASKLEDGER_RULES');
  server = spawn(cli, ['serve', '--rules', rules, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  baseUrl = await new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no listening line: ${err}`)), 20000);
    server.stderr.on('data', (chunk) => {
      err += chunk;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    server.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
});

after(() => server?.kill('SIGTERM'));

// A model that plays a script: each turn sees what the tools returned.
class ScriptedModel {
  constructor(steps) {
    this.steps = steps;
    this.seen = [];
  }
  async getResponse(request) {
    const input = JSON.stringify(request.input);
    this.seen.push(input);
    const step = this.steps[this.seen.length - 1];
    assert.ok(step, `the model was asked more often than scripted (${this.seen.length})`);
    return { usage: new Usage(), output: step(input), responseId: `r${this.seen.length}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('not streamed in this test');
  }
}

const callItem = (callId, name, args) => [
  { type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' },
];
const say = (text) => [
  {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text }],
  },
];

test('a blocked call returns its reason to the model; the corrected call runs once', async () => {
  const client = new TaskledgerClient(baseUrl);
  const { conversation } = await client.open();
  const effects = [];
  const verify = gatedTool(client, conversation, {
    name: 'verify_identity',
    description: 'Verify the customer identity',
    parameters: z.object({}),
    execute: async () => ({ verified: true }),
  });
  const cancel = gatedTool(client, conversation, {
    name: 'cancel_subscription',
    description: 'Cancel a subscription',
    parameters: z.object({ id: z.string() }),
    execute: async (input, _ctx, _details, gate) => {
      effects.push({ id: input.id, key: gate.idempotencyKey });
      return { cancelled: input.id };
    },
  });
  const model = new ScriptedModel([
    () => callItem('call-1', 'cancel_subscription', { id: 'S1' }),
    (input) => {
      // The gate's reason reached the model as the tool result.
      assert.match(input, /identity has not been verified/);
      return callItem('call-2', 'verify_identity', {});
    },
    () => callItem('call-3', 'cancel_subscription', { id: 'S1' }),
    (input) => {
      assert.match(input, /cancelled/);
      return say('Your subscription S1 is cancelled.');
    },
  ]);
  const runner = new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });
  const agent = new Agent({ name: 'support', instructions: 'Help.', tools: [verify, cancel] });
  const result = await runner.run(agent, 'Please cancel my subscription S1.');
  assert.equal(result.finalOutput, 'Your subscription S1 is cancelled.');
  assert.equal(effects.length, 1);
  assert.equal(effects[0].id, 'S1');
  assert.ok(effects[0].key && effects[0].key.length > 8);

  const { commands } = await client.listCommands(conversation);
  assert.equal(commands.length, 1);
  assert.equal(commands[0].state, 'succeeded');
  assert.equal(commands[0].idempotency_key, effects[0].key);
  const { decisions } = await client.decisions(conversation);
  assert.ok(decisions.some((d) => d.rule === 'subscription.identity_verified' && d.decision === 'deny'));
  const block = await client.render(conversation);
  assert.match(block.state_block, /identity_verified/);
});

test('the same write proposed again is not run twice; errors are typed', async () => {
  const client = new TaskledgerClient(baseUrl);
  const { conversation } = await client.open();
  await client.gate(conversation, { id: 'v', tool: 'verify_identity' }, async () => ({ verified: true }));
  let runs = 0;
  const call = (id) => ({ id, tool: 'cancel_subscription', arguments: { id: 'S2' } });
  const first = await client.gate(conversation, call('a'), async () => ++runs && { done: true });
  assert.match(first, /done/);
  const again = await client.gate(conversation, call('b'), async () => ++runs && { done: true });
  assert.match(again, /Already done/);
  assert.equal(runs, 1);
  await assert.rejects(client.propose(conversation, { tool: 'x' }), (e) => {
    assert.ok(e instanceof TaskledgerError);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'invalid_argument');
    return true;
  });
});
