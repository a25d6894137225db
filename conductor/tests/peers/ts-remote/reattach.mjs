// An ACP editor on the official TypeScript SDK 2.4's remote clients (`ws URL` or `http URL`)
// for the session layer's tests: one that starts a turn and vanishes in the middle of it, and
// one that takes the session back on a new connection.
//
//   reattach.mjs start ws|http URL PROMPT
//     initialize, session/new, prints {"sessionId"}, sends PROMPT, then kills itself (SIGKILL:
//     its socket destroyed, nothing said or closed) ACP_CUT_AFTER_MS after sending it, or when
//     the agent asks it for permission (ACP_CUT_AT=permission).
//   reattach.mjs load ws|http URL SESSION [NEXT_PROMPT]
//     initialize, session/load SESSION; prints one JSON line per thing that comes: {"update":
//     TEXT} for the agent's (and the user's: {"user": TEXT}) text chunks, {"turnEnded":
//     STOP_REASON} for the layer's `_sacp/turn_ended`, {"permission": TITLE} for a permission
//     request (it allows), {"loaded": true} for the load's answer. With ACP_UNTIL=turn_ended it
//     then waits for a turn to end; then, with NEXT_PROMPT, prompts once more and prints
//     {"answer": STOP_REASON, "said": [...]}. With ACP_CHECK_STREAM=1 it prints no update but
//     checks that the agent's `chunk N…` chunks come as 1, 2, 3, … and, once the turn ended,
//     prints {"chunks": HOW_MANY, "wrong": [the first chunks out of place]}. With
//     ACP_LOAD_IF_OFFERED=1 it loads only if the `initialize` answer offers `loadSession`, as an
//     editor that follows ACP does: it prints {"offered": true|false} first, and exits 4 when
//     not offered.
//
// With ACP_TOKEN set it sends `Authorization: Bearer ACP_TOKEN`.
import WebSocket from "ws";
import { client, methods } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [mode, profile, url, ...rest] = process.argv.slice(2);
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : {};
// The DELETE that ends an HTTP connection, once sent (waited for at the end).
let deleted;
const tracked = (input, init) => {
  const response = globalThis.fetch(input, init);
  if (init?.method === "DELETE") deleted = response;
  return response;
};
const stream = profile === "ws"
  ? createWebSocketStream(url, { headers, WebSocket })
  : createHttpStream(url, { headers, fetch: tracked });
const print = (value) => console.log(JSON.stringify(value));
const vanish = () => process.kill(process.pid, "SIGKILL");

let said = [];
const check = process.env.ACP_CHECK_STREAM === "1";
let chunks = 0;
const wrong = [];
let turnEnded;
const ended = new Promise((resolve) => { turnEnded = resolve; });

await client()
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.content?.type !== "text") return;
    if (update.sessionUpdate === "agent_message_chunk" && check) {
      const n = Number(/^chunk (\d+)/.exec(update.content.text)?.[1]);
      if (n === chunks + 1) {
        chunks = n;
        // Something to read now and then, for a reader that waits line by line.
        if (chunks % 20000 === 0) print({ progress: chunks });
      }
      else if (wrong.length < 10) wrong.push(update.content.text.slice(0, 20));
    } else if (update.sessionUpdate === "agent_message_chunk") {
      said.push(update.content.text);
      if (mode === "load") print({ update: update.content.text });
    } else if (update.sessionUpdate === "user_message_chunk" && mode === "load") {
      print({ user: update.content.text });
    }
  })
  .onNotification("_sacp/turn_ended", (params) => params, ({ params }) => {
    print({ turnEnded: params.stopReason ?? null });
    turnEnded();
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    if (mode === "start") {
      if (process.env.ACP_CUT_AT === "permission") vanish();
      return new Promise(() => {});
    }
    print({ permission: params.toolCall.title });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .connectWith(stream, async (cx) => {
    const initialized = await cx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    if (mode === "load" && process.env.ACP_LOAD_IF_OFFERED === "1") {
      const offered = initialized.agentCapabilities?.loadSession === true;
      print({ offered });
      if (!offered) process.exit(4);
    }
    if (mode === "start") {
      const { sessionId } = await cx.request(methods.agent.session.new, { cwd: "/tmp", mcpServers: [] });
      print({ sessionId });
      const cutAfter = Number(process.env.ACP_CUT_AFTER_MS ?? "NaN");
      if (!Number.isNaN(cutAfter)) setTimeout(vanish, cutAfter);
      await cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: rest[0] }] });
      // The turn was not to end before the cut.
      print({ unexpected: "the turn ended", said });
      process.exit(3);
    }
    const [sessionId, next] = rest;
    await cx.request(methods.agent.session.load, { sessionId, cwd: "/tmp", mcpServers: [] });
    print({ loaded: true });
    if (process.env.ACP_UNTIL === "turn_ended") await ended;
    if (check) print({ chunks, wrong });
    if (next) {
      said = [];
      const { stopReason } = await cx.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: next }],
      });
      print({ answer: stopReason, said });
    }
  });
// `connectWith` ends an HTTP transport without waiting for its DELETE (see editor.mjs).
if (profile === "http") {
  const until = Date.now() + 2000;
  while (!deleted && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  await deleted?.catch(() => {});
}
process.exit(0);
