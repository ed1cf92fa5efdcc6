// `taskledger audit explain CONV CALL_ID`: why a call was decided as it was.
// For every decision taken for the call: the outcome and deciding rule, every
// rule evaluated, and for each rule (the deciding one first in the text) the
// chain rule -> ledger entries it read (value in the state the decision saw,
// verified or claimed, the version that wrote it) -> the tool call and output
// path (extraction rule, with --rules) each entry came from; then what became
// of the call (its recorded outcomes, uncertain / deduplicated / awaiting
// approval named as such). Single-threaded like the CLI.
#pragma once

#include <string>

#include "taskledger/ledger/store.h"

namespace taskledger::cli {

// Prints the explanation (text, or one JSON object with `json`). `rules_dir`
// (may be empty) is the pack whose extraction rules name output paths.
// Returns kExitOk, or kExitUsage (unknown conversation or call, store error,
// a pack that does not load), having said why on stderr.
int ExplainCall(Store& store, const ConversationId& id, const std::string& call_id,
                const std::string& rules_dir, bool json);

}  // namespace taskledger::cli
