// The HTTP client of `taskledger serve` (docs/openapi.yaml): one method per
// route, typed answers, errors as TaskledgerError with the service's code and
// HTTP status. A client may know several service URLs (processes over one
// store): a request that could not reach one (connection refused or reset,
// 503) is sent to the next. Resending is safe by the API's contract: every
// answer is given only after the service committed, and a call proposed again
// under the same id returns its recorded outcome, never a second lease.

export type JSONValue =
  | string
  | number
  | boolean
  | null
  | JSONValue[]
  | { [key: string]: JSONValue };
export type JSONObject = { [key: string]: JSONValue };

/** A tool call as the model proposed it. */
export interface Call {
  id: string;
  tool: string;
  arguments?: JSONObject;
}

export type Outcome = "allow" | "confirm" | "require_approval" | "deny";

export interface Decision {
  outcome: Outcome;
  allowed: boolean;
  rule_id: string;
  reason: string;
  pack_version: string;
  read_only: boolean;
}

export type CommandState =
  | "pending"
  | "blocked"
  | "approved"
  | "leased"
  | "succeeded"
  | "failed"
  | "uncertain"
  | "cancelled";

/** A command of the command ledger (the fields a client uses). */
export interface Command {
  command_key: string;
  idempotency_key: string;
  fencing_token: number;
  state: CommandState;
  tool: string;
  arguments: JSONObject;
  /** The tool call that reserved it; absent for one no tool call reserved or reserved before 0.2. */
  call_id?: string;
  [field: string]: JSONValue | undefined;
}

export interface ProposeResult {
  decision: Decision;
  decision_record: JSONObject;
  /** Run the call only when true; otherwise hand `message` to the model. */
  execute: boolean;
  message: string;
  message_is_error: boolean;
  /** For a write: the command, leased to this client when `execute`. */
  command?: Command;
  /** For a write already made: what it returned the first time. */
  recorded_output?: JSONValue;
  version: number;
}

/** ok: the tool answered; error: it refused; not_made: nothing happened;
 *  uncertain: it may have taken effect (timeout, crash). */
export type OutcomeStatus = "ok" | "error" | "not_made" | "uncertain";

export interface OutcomeResult {
  message: string;
  message_is_error: boolean;
  command?: Command;
  version: number;
}

export interface ClientOptions {
  /** One service URL, or several processes over one store (tried in order). */
  url: string | string[];
  /** The tenant's bearer token, when the service runs with --tokens. */
  token?: string;
  /** Per-request timeout in ms (default 10 s). */
  timeoutMs?: number;
}

/** An error answered by the service, or no service reachable. */
export class TaskledgerError extends Error {
  constructor(
    message: string,
    /** The service's code ("invalid_argument", "conflict", ...), or "unreachable". */
    readonly code: string,
    /** The HTTP status; 0 when no service answered. */
    readonly status: number,
  ) {
    super(message);
    this.name = "TaskledgerError";
  }
}

export class TaskledgerClient {
  private readonly urls: string[];
  private readonly token?: string;
  private readonly timeoutMs: number;
  private next = 0;

  constructor(options: ClientOptions) {
    const urls = Array.isArray(options.url) ? options.url : [options.url];
    if (urls.length === 0) throw new TypeError("taskledger: at least one service url is needed");
    this.urls = urls.map((u) => u.replace(/\/+$/, ""));
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Opens a conversation (a new id when none is given). */
  open(conversation?: string): Promise<{ conversation: string; tenant: string; version: number }> {
    return this.post("/v1/open", conversation === undefined ? {} : { conversation });
  }

  /** Records a user message; `proposedAction` is what a "yes" would confirm. */
  message(
    conversation: string,
    text: string,
    proposedAction?: Call,
  ): Promise<{ staged_updates: number; extraction_errors: JSONValue[]; version: number }> {
    const body: JSONObject = { conversation, text };
    if (proposedAction) body.proposed_action = callJson(proposedAction);
    return this.post("/v1/message", body);
  }

  /** Gates a call; for an allowed write, the command is reserved and leased. */
  propose(conversation: string, call: Call): Promise<ProposeResult> {
    return this.post("/v1/propose", { conversation, call: callJson(call) });
  }

  /** Reports what a call the client ran did. */
  outcome(
    conversation: string,
    call: Call,
    status: OutcomeStatus,
    options: { output?: JSONValue; detail?: string; command?: Command } = {},
  ): Promise<OutcomeResult> {
    const body: JSONObject = { conversation, call: callJson(call), status };
    if (options.output !== undefined) body.output = options.output;
    if (options.detail !== undefined) body.detail = options.detail;
    if (options.command) {
      body.command_key = options.command.command_key;
      body.fencing_token = options.command.fencing_token;
    }
    return this.post("/v1/outcome", body);
  }

  endTurn(conversation: string): Promise<{ version: number }> {
    return this.post("/v1/end-turn", { conversation });
  }

  /** The task-state block for the next prompt. */
  render(
    conversation: string,
    format: "plain" | "markdown" | "xml" = "markdown",
  ): Promise<{ state_block: string; chars: number; approx_tokens: number; version: number }> {
    return this.post("/v1/render", { conversation, format });
  }

  versions(conversation: string, range: { from?: number; to?: number } = {}) {
    return this.post<{ head: number; turns: JSONObject[] }>("/v1/versions", { conversation, ...range });
  }

  state(conversation: string, version?: number) {
    const body: JSONObject = { conversation };
    if (version !== undefined) body.version = version;
    return this.post<JSONObject>("/v1/state", body);
  }

  diff(conversation: string, range: { from?: number; to?: number } = {}) {
    return this.post<{ from: number; to: number; diff: JSONObject }>("/v1/diff", {
      conversation,
      ...range,
    });
  }

  decisions(conversation: string, range: { from?: number; to?: number } = {}) {
    return this.post<{ head: number; decisions: JSONObject[] }>("/v1/decisions", {
      conversation,
      ...range,
    });
  }

  commands(conversation: string, state?: CommandState) {
    const body: JSONObject = { conversation };
    if (state) body.state = state;
    return this.post<{ commands: Command[] }>("/v1/commands/list", body);
  }

  /** Approves a held command (needs an operator token). */
  approve(conversation: string, commandKey: string, reason: string, approver?: string) {
    return this.operatorMove("/v1/commands/approve", conversation, commandKey, reason, approver);
  }

  /** Denies a held command (needs an operator token); the model is told once. */
  deny(conversation: string, commandKey: string, reason: string, approver?: string) {
    return this.operatorMove("/v1/commands/deny", conversation, commandKey, reason, approver);
  }

  /** True when a service answers /readyz. */
  async ready(): Promise<boolean> {
    try {
      await this.send("GET", "/readyz", undefined);
      return true;
    } catch {
      return false;
    }
  }

  private operatorMove(
    path: string,
    conversation: string,
    commandKey: string,
    reason: string,
    approver?: string,
  ): Promise<{ command: Command }> {
    const body: JSONObject = { conversation, command_key: commandKey, reason };
    if (approver !== undefined) body.approver = approver;
    return this.post(path, body);
  }

  private post<T>(path: string, body: JSONObject): Promise<T> {
    return this.send("POST", path, body) as Promise<T>;
  }

  // Tries each service once, starting with the one that answered last.
  private async send(method: string, path: string, body: JSONObject | undefined): Promise<unknown> {
    let last: TaskledgerError | undefined;
    for (let i = 0; i < this.urls.length; ++i) {
      const index = (this.next + i) % this.urls.length;
      try {
        const answer = await this.sendTo(this.urls[index], method, path, body);
        this.next = index;
        return answer;
      } catch (e) {
        if (!(e instanceof TaskledgerError) || !retryable(e)) throw e;
        last = e;
      }
    }
    throw last ?? new TaskledgerError("no taskledger service answered", "unreachable", 0);
  }

  private async sendTo(
    base: string,
    method: string,
    path: string,
    body: JSONObject | undefined,
  ): Promise<unknown> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let response: Response;
    try {
      response = await fetch(base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? String(e);
      throw new TaskledgerError(`${base}${path}: ${cause}`, "unreachable", 0);
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : {};
    } catch {
      throw new TaskledgerError(
        `${base}${path}: HTTP ${response.status}, not JSON: ${text.slice(0, 200)}`,
        "bad_response",
        response.status,
      );
    }
    if (!response.ok) {
      const err = (parsed as { error?: { code?: string; message?: string } }).error ?? {};
      throw new TaskledgerError(
        err.message ?? `HTTP ${response.status}`,
        err.code ?? "http_" + response.status,
        response.status,
      );
    }
    return parsed;
  }
}

// Nothing was done by a service that could not be reached or said 503.
function retryable(e: TaskledgerError): boolean {
  return e.status === 0 || e.status === 503;
}

function callJson(call: Call): JSONObject {
  return { id: call.id, tool: call.tool, arguments: call.arguments ?? {} };
}
