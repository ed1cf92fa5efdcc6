// @openai/agents tools behind taskledger's gate and command ledger. gatedTool
// takes the options of the SDK's tool() with an execute that also receives a
// GateContext, and returns an SDK tool whose every call is first proposed to
// `taskledger serve` (/v1/propose). A call the gate does not allow never runs:
// the service's message (the deciding rule's reason, or "waiting for
// approval") is the tool result the model reads. An allowed call runs, a
// write with its command's idempotency key (hand it to the external system),
// and what it returned is reported (/v1/outcome): the ledger extracts from
// it and the command is settled. A write whose execute throws is reported
// uncertain (it may have taken effect) and the model is told so; a read that
// throws is reported as the tool's error. The same call proposed again (the
// model retries) gets its recorded outcome and does not run twice.
import { randomUUID } from "node:crypto";

import { tool } from "@openai/agents";
import type {
  FunctionTool,
  RunContext,
  ToolExecuteArgument,
  ToolInputParameters,
} from "@openai/agents";

import type { Call, Command, Decision, JSONObject, JSONValue, TaskledgerClient } from "./client.js";

/** What a gated tool's execute receives besides its input. */
export interface GateContext {
  /** The model's call id (the SDK's), under which the service records the call. */
  callId: string;
  conversation: string;
  decision: Decision;
  /** For a write: the command leased to this call. */
  command?: Command;
  /** For a write: the key to pass to the external system, so a retry is not applied twice. */
  idempotencyKey?: string;
  runContext?: RunContext<unknown>;
}

export interface GatedToolOptions<TParameters extends ToolInputParameters> {
  client: TaskledgerClient;
  /** The conversation this agent runs in, or a function of the run's context. */
  conversation: string | ((runContext?: RunContext<unknown>) => string);
  name: string;
  description: string;
  parameters: TParameters;
  strict?: boolean;
  execute: (input: ToolExecuteArgument<TParameters>, gate: GateContext) => unknown;
}

/** Counts what the gate did, for tests and logs. */
export interface GateEvents {
  onDecision?: (call: Call, decision: Decision, executed: boolean) => void;
}

export function gatedTool<TParameters extends ToolInputParameters>(
  options: GatedToolOptions<TParameters> & GateEvents,
): FunctionTool<unknown, TParameters, string> {
  const { client, name } = options;
  // tool()'s options are a union over parameter kinds that a generic
  // TParameters cannot be narrowed to; the object below is one of them.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const sdkOptions: any = {
    name,
    description: options.description,
    parameters: options.parameters,
    strict: options.strict,
    // The SDK's own error handler would hide the reason; every path below
    // returns the text the model should read.
    errorFunction: null,
    execute: async (
      input: ToolExecuteArgument<TParameters>,
      runContext?: RunContext<unknown>,
      details?: { toolCall?: { callId?: string } },
    ) => {
      const conversation =
        typeof options.conversation === "function"
          ? options.conversation(runContext)
          : options.conversation;
      const call: Call = {
        id: details?.toolCall?.callId ?? randomUUID(),
        tool: name,
        arguments: asArguments(input),
      };
      const proposed = await client.propose(conversation, call);
      options.onDecision?.(call, proposed.decision, proposed.execute);
      if (!proposed.execute) {
        // Denied, held for approval, or already done: the service says which.
        if (!proposed.message_is_error && proposed.recorded_output !== undefined) {
          return asText(proposed.recorded_output);
        }
        return proposed.message;
      }
      const command = proposed.command;
      let output: unknown;
      try {
        output = await options.execute(input, {
          callId: call.id,
          conversation,
          decision: proposed.decision,
          command,
          idempotencyKey: command?.idempotency_key,
          runContext,
        });
      } catch (e) {
        const detail = e instanceof Error ? e.message : String(e);
        const reported = await client.outcome(conversation, call, command ? "uncertain" : "error", {
          detail,
          command,
        });
        return reported.message;
      }
      const json = asJson(output);
      const reported = await client.outcome(conversation, call, "ok", { output: json, command });
      return reported.message_is_error ? reported.message : asText(json);
    },
  };
  return tool(sdkOptions) as FunctionTool<unknown, TParameters, string>;
}

function asArguments(input: unknown): JSONObject {
  if (typeof input === "string") {
    try {
      const parsed: unknown = JSON.parse(input);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
        return parsed as JSONObject;
      }
    } catch {
      // not JSON: the raw input below
    }
    return { input };
  }
  if (input !== null && typeof input === "object" && !Array.isArray(input)) {
    return asJson(input) as JSONObject;
  }
  return { input: asJson(input) };
}

// A tool's return value as JSON (undefined -> null; other values by JSON rules).
function asJson(value: unknown): JSONValue {
  if (value === undefined) return null;
  if (typeof value === "string") return value;
  return JSON.parse(JSON.stringify(value)) as JSONValue;
}

function asText(value: JSONValue): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}
