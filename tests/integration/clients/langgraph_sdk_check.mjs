// The npm @langchain/langgraph-sdk client against `langgraph dev` (tests/integration/test_real_clients.py runs it
// with the server's URL): content blocks, a fork from an earlier checkpoint, errors. Prints one JSON object.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const ask = { messages: [{ role: "user", content: [{ type: "text", text: "ERR_TIMEOUT 是什么？" }] }] };
const out = {};
const thread = (await client.threads.create()).thread_id;
const first = await client.runs.wait(thread, "executor", { input: ask, context: { kb: "sample" } });
out.first = first.trace.map((e) => [e.query, e.relevance_level]);
out.cited = first.citations.map((c) => c.doc_key);
const afterFirst = (await client.threads.getState(thread)).checkpoint.checkpoint_id;
const again = await client.runs.wait(thread, "executor", { input: ask });
out.again = again.trace.map((e) => e.dedup_reason);
const history = await client.threads.getHistory(thread, { limit: 100 });
const origin = history[history.length - 1].checkpoint.checkpoint_id;
const edited = await client.runs.wait(thread, "executor", { input: ask, checkpointId: origin });
out.edited = edited.trace.map((e) => [e.relevance_level, e.sent.length]);
const forked = await client.runs.wait(thread, "executor", { input: ask, checkpointId: afterFirst });
out.forked = forked.trace.map((e) => e.dedup_reason);
out.errors = {};
for (const [name, context] of [["kb", { kb: "nope" }], ["budget", { lookup_budget: "lots" }]]) {
  try {
    await client.runs.wait((await client.threads.create()).thread_id, "executor", { input: ask, context });
    out.errors[name] = null;
  } catch (e) {
    out.errors[name] = e.message;
  }
}
console.log(JSON.stringify(out));
