// The benchmark fixture shared by the peers, identical to bench_policy.cc's:
// a 200-entry ledger (40 orders x 4 facts, 20 products, 10 identifiers,
// 10 conditions), a successful-call history, and one proposed
// cancel_pending_order call that all ten rules allow.
export function buildLedger() {
  const facts = {};
  for (let i = 0; i < 40; i++) {
    const id = `#W${i}`;
    facts[`order.${id}.status`] = i % 3 === 0 ? 'delivered' : 'pending';
    facts[`order.${id}.user_id`] = 'ann_1';
    facts[`order.${id}.total`] = 100 + i;
    facts[`order.${id}.order_id`] = id;
  }
  for (let i = 0; i < 20; i++) facts[`product.${i}.price`] = 10 + i;
  const identifiers = {user_id: 'ann_1'};
  for (let i = 0; i < 9; i++) identifiers[`aux.${i}`] = `aux_${i}`;
  const conditions = {account_hold: false, confirmation: {text: 'yes', action: null}};
  for (let i = 0; i < 8; i++) conditions[`flag.${i}`] = i % 2 === 0;
  const calls = [
    {tool: 'cancel_pending_order', arguments: {order_id: '#W1'}, outcome: 'ok'},
    {tool: 'get_order_details', arguments: {order_id: '#W1'}, outcome: 'ok'},
  ];
  return {facts, identifiers, conditions, calls};
}

export const call = {
  tool: 'cancel_pending_order',
  id: 'call_1',
  args: {order_id: '#W17', reason: 'no longer needed'},
};

// Every scalar value that a tool output put into the ledger (all entries are
// tool outputs in the fixture): what ledger.observed() consults.
export function observedSet(ledger) {
  const s = new Set();
  for (const cat of [ledger.facts, ledger.identifiers, ledger.conditions]) {
    for (const v of Object.values(cat)) if (typeof v !== 'object' || v === null) s.add(v);
  }
  return s;
}

export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}
