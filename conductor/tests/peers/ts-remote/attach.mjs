// A client on the official TypeScript SDK 2.4's remote clients (`ws URL` or `http URL`) that
// attaches to a live session of the conductor's with `session/attach` (the SDK sends it as a
// request of any method), for the multi-client tests:
//
//   attach.mjs ws|http URL SESSION [ROLE]
//     initialize, session/attach SESSION (history "full", clientId "ts", ROLE or a
//     controller); prints {"attached": RESULT}, then one JSON line per thing that comes:
//     {"update": TEXT} for the agent's text chunks, {"user": TEXT} for the user's,
//     {"turnEnded": STOP_REASON} for the layer's `_sacp/turn_ended`, {"permission": TITLE} for
//     a permission request, which it answers with the option ACP_ANSWER names (else never).
//     After ACP_TURNS turn ends (default 1) it sends session/detach, prints {"detached":
//     RESULT} and exits.
//
// With ACP_TOKEN set it sends `Authorization: Bearer ACP_TOKEN`.
import WebSocket from "ws";
import { client, methods } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [profile, url, sessionId, role] = process.argv.slice(2);
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : {};
const stream = profile === "ws"
  ? createWebSocketStream(url, { headers, WebSocket })
  : createHttpStream(url, { headers });
const print = (value) => console.log(JSON.stringify(value));
const turns = Number(process.env.ACP_TURNS ?? "1");
let ends = 0;
let enough;
const done = new Promise((resolve) => { enough = resolve; });

await client()
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.content?.type !== "text") return;
    if (update.sessionUpdate === "agent_message_chunk") print({ update: update.content.text });
    else if (update.sessionUpdate === "user_message_chunk") print({ user: update.content.text });
  })
  .onNotification("_sacp/turn_ended", (params) => params, ({ params }) => {
    print({ turnEnded: params.stopReason ?? null });
    ends += 1;
    if (ends >= turns) enough();
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    print({ permission: params.toolCall.title });
    const answer = process.env.ACP_ANSWER;
    if (!answer) return new Promise(() => {});
    return { outcome: { outcome: "selected", optionId: answer } };
  })
  .connectWith(stream, async (cx) => {
    await cx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const attached = await cx.request("session/attach", {
      sessionId,
      clientId: "ts",
      historyPolicy: "full",
      ...(role ? { role } : {}),
    });
    print({ attached });
    await done;
    const detached = await cx.request("session/detach", { sessionId });
    print({ detached });
  });
process.exit(0);
