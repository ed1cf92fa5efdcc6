// Types of taskledger-client (src/index.js); the API is docs/openapi.yaml of taskledger.
export interface Call {
  id: string;
  tool: string;
  arguments?: Record<string, unknown>;
}
export interface Decision {
  outcome: 'allow' | 'confirm' | 'require_approval' | 'deny';
  allowed: boolean;
  rule_id: string;
  reason: string;
  pack_version: string;
  read_only: boolean;
}
export interface Command {
  command_key: string;
  idempotency_key: string;
  fencing_token: number;
  state: 'pending' | 'blocked' | 'approved' | 'leased' | 'succeeded' | 'failed' | 'uncertain' | 'cancelled';
  tool: string;
  arguments: Record<string, unknown>;
  [field: string]: unknown;
}
export interface Proposal {
  decision: Decision;
  decision_record: Record<string, unknown>;
  execute: boolean;
  message: string;
  message_is_error: boolean;
  command?: Command;
  version: number;
}
export interface OutcomeReport {
  status?: 'ok' | 'error' | 'not_made' | 'uncertain';
  output?: unknown;
  detail?: string;
  command?: Pick<Command, 'command_key' | 'fencing_token'>;
}
export interface Range {
  from?: number;
  to?: number;
}
export interface Gate {
  idempotencyKey?: string;
  commandKey?: string;
}
export declare class TaskledgerError extends Error {
  status: number;
  code: string;
}
export declare class TaskledgerClient {
  constructor(baseUrl: string, options?: { token?: string; fetch?: typeof fetch });
  open(conversation?: string): Promise<{ conversation: string; tenant: string; version: number }>;
  message(conversation: string, text: string, proposedAction?: Omit<Call, 'id'> & { id?: string }): Promise<{ version: number; staged_updates: number; extraction_errors: unknown[] }>;
  propose(conversation: string, call: Call): Promise<Proposal>;
  outcome(conversation: string, call: Call, report?: OutcomeReport): Promise<{ version: number; message: string; message_is_error: boolean; command?: Command }>;
  endTurn(conversation: string): Promise<{ version: number }>;
  render(conversation: string, format?: 'plain' | 'markdown' | 'xml'): Promise<{ state_block: string; chars: number; approx_tokens: number; version: number }>;
  versions(conversation: string, range?: Range): Promise<{ head: number; turns: Record<string, unknown>[] }>;
  state(conversation: string, version?: number): Promise<Record<string, unknown>>;
  diff(conversation: string, range?: Range): Promise<{ from: number; to: number; diff: Record<string, unknown> }>;
  decisions(conversation: string, range?: Range): Promise<{ head: number; decisions: Record<string, unknown>[] }>;
  listCommands(conversation: string, state?: Command['state']): Promise<{ commands: Command[] }>;
  approve(conversation: string, commandKey: string, reason: string, approver?: string): Promise<{ command: Command }>;
  deny(conversation: string, commandKey: string, reason: string, approver?: string): Promise<{ command: Command }>;
  gate(conversation: string, call: Call, execute: (gate: Gate) => Promise<unknown>): Promise<string>;
}
