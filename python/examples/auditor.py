"""An auditor's script: opens a Redis-backed (or any) store read-only and,
for one conversation, prints every version: the decisions taken in that turn
(tool, outcome, deciding rule, reason, the version the decision saw) and the
task state as it stood at that version, with provenance.

    python auditor.py URL TENANT CONVERSATION

Exits 2 if the conversation has no committed turns. Reads only; safe to run
beside live agents (the store is thread- and process-safe).
"""

import sys

import taskledger


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    url, tenant, conversation = argv[1:]
    store = taskledger.open_store(url)
    head = store.head(tenant, conversation)
    if head == 0:
        print(f"{tenant}/{conversation}: no committed turns", file=sys.stderr)
        return 2
    print(f"{tenant}/{conversation}: {head} versions")
    for turn in store.read_turns(tenant, conversation):
        print(f"== version {turn.turn}")
        for d in turn.decisions:
            rule = f" [{d['rule']}]" if d["rule"] else ""
            reason = f": {d['reason']}" if d["reason"] else ""
            print(f"  decision {d['call_id']} {d['tool']} -> {d['decision']}{rule}"
                  f" (saw v{d['version_seen']}){reason}")
        for c in turn.calls:
            print(f"  call {c['call_id']} {c['tool']}: {c['outcome']}")
        state = store.read_version(tenant, conversation, turn.turn)
        for line in state.render(include_provenance=True).splitlines():
            print("  | " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
