// taskledger-client: the HTTP/JSON API of `taskledger serve` (docs/openapi.yaml
// in the taskledger repository; the API decisions are in docs/deploy.md).
// One method per route; every method resolves to the answer's JSON body and
// rejects with a TaskledgerError (status, code, message) for an error answer.
// Retries: `propose` (same call id) and `outcome` are safe to send again;
// a network failure rejects with status 0.

export class TaskledgerError extends Error {
  constructor(status, code, message) {
    super(`taskledger serve: ${status} ${code}: ${message}`);
    this.name = 'TaskledgerError';
    this.status = status;
    this.code = code;
  }
}

export class TaskledgerClient {
  /**
   * @param {string} baseUrl e.g. "http://127.0.0.1:8420"
   * @param {{token?: string, fetch?: typeof fetch}} [options]
   */
  constructor(baseUrl, options = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  async post(path, body) {
    const headers = { 'content-type': 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res;
    try {
      res = await this.fetch(this.baseUrl + path, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
    } catch (e) {
      throw new TaskledgerError(0, 'unreachable', String(e?.cause?.message ?? e));
    }
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new TaskledgerError(res.status, 'bad_answer', text.slice(0, 200));
    }
    if (!res.ok) {
      throw new TaskledgerError(res.status, json?.error?.code ?? 'error', json?.error?.message ?? text);
    }
    return json;
  }

  open(conversation) {
    return this.post('/v1/open', conversation === undefined ? {} : { conversation });
  }
  message(conversation, text, proposedAction) {
    const body = { conversation, text };
    if (proposedAction) body.proposed_action = proposedAction;
    return this.post('/v1/message', body);
  }
  propose(conversation, call) {
    return this.post('/v1/propose', { conversation, call });
  }
  /**
   * @param {{status?: 'ok'|'error'|'not_made'|'uncertain', output?: unknown, detail?: string,
   *          command?: {command_key: string, fencing_token: number}}} report
   */
  outcome(conversation, call, report = {}) {
    const body = { conversation, call, status: report.status ?? 'ok' };
    if (report.output !== undefined) body.output = report.output;
    if (report.detail !== undefined) body.detail = report.detail;
    if (report.command) {
      body.command_key = report.command.command_key;
      body.fencing_token = report.command.fencing_token;
    }
    return this.post('/v1/outcome', body);
  }
  endTurn(conversation) {
    return this.post('/v1/end-turn', { conversation });
  }
  render(conversation, format = 'markdown') {
    return this.post('/v1/render', { conversation, format });
  }
  versions(conversation, range = {}) {
    return this.post('/v1/versions', { conversation, ...range });
  }
  state(conversation, version) {
    return this.post('/v1/state', version === undefined ? { conversation } : { conversation, version });
  }
  diff(conversation, range = {}) {
    return this.post('/v1/diff', { conversation, ...range });
  }
  decisions(conversation, range = {}) {
    return this.post('/v1/decisions', { conversation, ...range });
  }
  listCommands(conversation, state) {
    return this.post('/v1/commands/list', state ? { conversation, state } : { conversation });
  }
  approve(conversation, commandKey, reason, approver) {
    return this.post('/v1/commands/approve', { conversation, command_key: commandKey, reason, approver });
  }
  deny(conversation, commandKey, reason, approver) {
    return this.post('/v1/commands/deny', { conversation, command_key: commandKey, reason, approver });
  }

  /**
   * Gates one call the caller runs itself: propose; if the service says not
   * to run it, resolve to its message (for the model); else run `execute`
   * with the idempotency key (writes), report what it did, and resolve to the
   * tool's output as text. An exception from `execute` is reported as
   * `uncertain` for a write (it may have happened) and `error` for a read,
   * and resolves to an error text for the model.
   * @param {string} conversation
   * @param {{id: string, tool: string, arguments?: object}} call
   * @param {(gate: {idempotencyKey?: string, commandKey?: string}) => Promise<unknown>} execute
   */
  async gate(conversation, call, execute) {
    const proposed = await this.propose(conversation, call);
    if (!proposed.execute) return proposed.message;
    const command = proposed.command;
    let output;
    try {
      output = await execute({ idempotencyKey: command?.idempotency_key, commandKey: command?.command_key });
    } catch (e) {
      const status = command ? 'uncertain' : 'error';
      const answer = await this.outcome(conversation, call, { status, detail: String(e?.message ?? e), command });
      return answer.message;
    }
    await this.outcome(conversation, call, { status: 'ok', output, command });
    return typeof output === 'string' ? output : JSON.stringify(output);
  }
}
