// Times the bench's ten cancel_pending_order rules in two peer engines and
// prints one JSON line {"cedar_wasm_p50_us", "cedar_wasm_p99_us",
// "cel_js_p50_us", "cel_js_p99_us"}. Run by bench_policy from the folder the
// packages were installed into. Per check, each peer gets what the taskledger
// checker gets: the call and the ledger. Lookups that the engine's language
// cannot express (Cedar has no dynamic keys) are resolved in JS inside the
// timed region, as the host application would have to.
import {performance} from 'node:perf_hooks';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import {parse} from '@marcbachmann/cel-js';
import {buildLedger, call, observedSet, percentile} from './fixture.js';

const iterations = Number(process.argv[2] || 20000);
const ledger = buildLedger();

function time(fn) {
  for (let i = 0; i < 2000; i++) fn();
  const samples = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    fn();
    samples[i] = (performance.now() - t0) * 1000;
  }
  samples.sort();
  return [percentile(samples, 0.5), percentile(samples, 0.99)];
}

// --- CEL: the ledger maps are the context; keys are built in the expressions.
const celRules = [
  'has(identifiers.user_id)',
  'facts["order." + args.order_id + ".status"] == "pending"',
  'args.order_id in observed',
  'facts["order." + args.order_id + ".user_id"] == identifiers.user_id',
  'args.reason in ["no longer needed", "ordered by mistake"]',
  'cancels < 3',
  '!conditions.account_hold',
  'verified["order." + args.order_id + ".status"]',
  'facts["order." + args.order_id + ".total"] < 5000',
  'confirmed',
].map((r) => parse(r));
const observedMap = Object.fromEntries([...observedSet(ledger)].map((v) => [String(v), true]));
const verified = Object.fromEntries(Object.keys(ledger.facts).map((k) => [k, true]));
function celCheck() {
  const ctx = {
    facts: ledger.facts,
    identifiers: ledger.identifiers,
    conditions: ledger.conditions,
    verified,
    observed: observedMap,
    args: call.args,
    cancels: BigInt(ledger.calls.filter((c) => c.outcome === 'ok' && c.tool === 'cancel_pending_order').length),
    confirmed: ledger.conditions.confirmation?.action == null,
  };
  for (const r of celRules) if (r(ctx) !== true) throw new Error('cel rule denied');
}

// --- Cedar: one permit plus nine forbids over a context the host resolves.
const policies = `
permit (principal, action == Action::"cancel_pending_order", resource);
forbid (principal, action, resource) unless { context.user_known };
forbid (principal, action, resource) unless { context.status == "pending" };
forbid (principal, action, resource) unless { context.observed };
forbid (principal, action, resource) unless { context.owner == context.user_id };
forbid (principal, action, resource) unless { ["no longer needed", "ordered by mistake"].contains(context.reason) };
forbid (principal, action, resource) unless { context.cancels < 3 };
forbid (principal, action, resource) when { context.account_hold };
forbid (principal, action, resource) unless { context.status_verified };
forbid (principal, action, resource) unless { context.total < 5000 };
forbid (principal, action, resource) unless { context.confirmed };
`;
const pre = cedar.preparsePolicySet('bench', {staticPolicies: policies});
if (pre.type !== 'success') throw new Error(JSON.stringify(pre.errors));
const observed = observedSet(ledger);
function cedarCheck() {
  const id = call.args.order_id;
  const key = `order.${id}`;
  const context = {
    user_known: ledger.identifiers.user_id !== undefined,
    user_id: ledger.identifiers.user_id ?? '',
    status: ledger.facts[`${key}.status`] ?? '',
    observed: observed.has(id) || observed.has(String(id)),
    owner: ledger.facts[`${key}.user_id`] ?? '',
    reason: call.args.reason,
    cancels: ledger.calls.filter((c) => c.outcome === 'ok' && c.tool === 'cancel_pending_order').length,
    account_hold: ledger.conditions.account_hold === true,
    status_verified: `${key}.status` in ledger.facts,
    total: ledger.facts[`${key}.total`] ?? 0,
    confirmed: ledger.conditions.confirmation?.action == null,
  };
  const answer = cedar.statefulIsAuthorized({
    principal: {type: 'User', id: ledger.identifiers.user_id},
    action: {type: 'Action', id: call.tool},
    resource: {type: 'Order', id},
    context,
    preparsedPolicySetId: 'bench',
    entities: [],
  });
  if (answer.type !== 'success' || answer.response.decision !== 'allow') {
    throw new Error('cedar denied: ' + JSON.stringify(answer));
  }
}

const [cedarP50, cedarP99] = time(cedarCheck);
const [celP50, celP99] = time(celCheck);
console.log(JSON.stringify({
  cedar_wasm_p50_us: +cedarP50.toFixed(3),
  cedar_wasm_p99_us: +cedarP99.toFixed(3),
  cel_js_p50_us: +celP50.toFixed(3),
  cel_js_p99_us: +celP99.toFixed(3),
}));
