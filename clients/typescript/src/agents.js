// gatedTool: an OpenAI Agents SDK (@openai/agents) function tool whose every
// call goes through `taskledger serve` first: the policy gate decides, a
// blocked call returns the reason to the model as the tool result, an
// allowed write is reserved and leased by the command ledger and runs once,
// with its idempotency key passed to `execute` as the fourth argument.
import { randomUUID } from 'node:crypto';
import { tool } from '@openai/agents';

/**
 * @param {import('./index.js').TaskledgerClient} client
 * @param {string | ((runContext: unknown) => string)} conversation
 * @param {object} options the options of `tool()` from @openai/agents; its
 *   execute(input, runContext, details, gate) receives gate.idempotencyKey
 */
export function gatedTool(client, conversation, options) {
  const { execute, ...rest } = options;
  return tool({
    ...rest,
    execute: async (input, runContext, details) => {
      const conv = typeof conversation === 'function' ? conversation(runContext) : conversation;
      const call = {
        id: details?.toolCall?.callId ?? randomUUID(),
        tool: options.name,
        arguments: input ?? {},
      };
      return client.gate(conv, call, (gate) => execute(input, runContext, details, gate));
    },
  });
}
