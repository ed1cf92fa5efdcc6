// The "shop" rule pack that the session, replay and CLI tests share, as file
// texts: get_order is read-only and records the order's status; cancel_order
// needs a pending order and the user's explicit yes; unknown tools are
// denied; a user message may carry an email address. Kept here, not under
// rules/, so the tests do not move when the shipped packs evolve.
//
// No policy dependency: session tests build a RulePack from ShopPackFiles()
// (tests/session/session_support.h), CLI tests write it to a directory.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace taskledger::testing {

// {path inside the pack, contents}: pack.json, extract.json, shop.lua.
const std::vector<std::pair<std::string, std::string>>& ShopPackFiles();

// Writes ShopPackFiles() into `dir` with two passing policy tests
// (tests/cancel.json: a delivered order's cancel is denied by
// shop.pending_only, a confirmed cancel of a pending one is allowed), and
// returns `dir`.
std::string WriteShopPack(const std::string& dir);

}  // namespace taskledger::testing
