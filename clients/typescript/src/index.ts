// @taskledger/client: the client of `taskledger serve`. Agents built on
// @openai/agents import gatedTool from "@taskledger/client/agents" (kept
// apart so the client needs no SDK). The service API is described in
// docs/openapi.yaml of the taskledger repository.
export * from "./client.js";
