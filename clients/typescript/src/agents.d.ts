// Types of taskledger-client/agents (src/agents.js).
import type { FunctionTool } from '@openai/agents';
import type { Gate, TaskledgerClient } from './index.js';
export declare function gatedTool(
  client: TaskledgerClient,
  conversation: string | ((runContext: unknown) => string),
  options: {
    name: string;
    description: string;
    parameters: unknown;
    execute: (input: any, runContext: unknown, details: unknown, gate: Gate) => Promise<unknown> | unknown;
    [option: string]: unknown;
  },
): FunctionTool<any, any, any>;
