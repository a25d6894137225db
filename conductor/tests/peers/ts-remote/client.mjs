// A client on the official TypeScript SDK 2.4's remote clients (`ws URL` or `http URL`),
// driven line by line on stdin, for the multi-client tests. It initializes (ACP v1), then
// reads one JSON command a line:
//
//   {"attach": PARAMS}   session/attach PARAMS; prints {"attached": RESULT} or {"error": E}
//   {"detach": SESSION}  session/detach; prints {"detached": RESULT} or {"error": E}
//   {"prompt": [SESSION, TEXT]}  session/prompt (not waited for); prints {"answer":
//                        STOP_REASON} or {"error": E} when it is answered
//   {"cancel": SESSION}  session/cancel
//   {"allow": OPTION}    answers the permission request waiting longest with OPTION
//   {"exit": true}       ends
//
// and prints one JSON line per thing that comes: {"update": TEXT} for the agent's text chunks
// (their first 12 characters), {"user": TEXT} for the user's, {"turnEnded": STOP_REASON} for
// the layer's `_sacp/turn_ended`, {"permission": TITLE} for a permission request,
// {"withdrawn": TITLE} when one is cancelled before it answered it, {"notice": METHOD} for
// any other notification of the layer's (`_sacp/...`). Every line is printed in the order
// things came. With ACP_TOKEN set it sends `Authorization: Bearer ACP_TOKEN`.
import readline from "node:readline";
import WebSocket from "ws";
import { client, methods } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [profile, url] = process.argv.slice(2);
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : {};
const stream = profile === "ws"
  ? createWebSocketStream(url, { headers, WebSocket })
  : createHttpStream(url, { headers });
const print = (value) => console.log(JSON.stringify(value));
const failed = (e) => print({ error: { code: e.code ?? null, message: e.message ?? String(e) } });
// Permission requests waiting for an answer, oldest first.
const waiting = [];

await client()
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.content?.type !== "text") return;
    const text = update.content.text.slice(0, 12);
    if (update.sessionUpdate === "agent_message_chunk") print({ update: text });
    else if (update.sessionUpdate === "user_message_chunk") print({ user: text });
  })
  .onNotification("_sacp/turn_ended", (params) => params, ({ params }) => {
    print({ turnEnded: params.stopReason ?? null });
  })
  .onNotification("_sacp/detached", (params) => params, () => print({ notice: "_sacp/detached" }))
  .onRequest(methods.client.session.requestPermission, ({ params, signal }) => {
    const title = params.toolCall.title;
    print({ permission: title });
    return new Promise((resolve, reject) => {
      const entry = { resolve };
      waiting.push(entry);
      signal?.addEventListener("abort", () => {
        const i = waiting.indexOf(entry);
        if (i >= 0) waiting.splice(i, 1);
        print({ withdrawn: title });
        reject(new Error("withdrawn"));
      });
    });
  })
  .connectWith(stream, async (cx) => {
    await cx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    print({ ready: true });
    const lines = readline.createInterface({ input: process.stdin });
    for await (const line of lines) {
      const command = JSON.parse(line);
      if (command.attach) {
        cx.request("session/attach", command.attach).then((attached) => print({ attached }), failed);
      } else if (command.detach) {
        cx.request("session/detach", { sessionId: command.detach }).then((detached) => print({ detached }), failed);
      } else if (command.prompt) {
        const [sessionId, text] = command.prompt;
        cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] })
          .then(({ stopReason }) => print({ answer: stopReason }), failed);
      } else if (command.cancel) {
        await cx.notify(methods.agent.session.cancel, { sessionId: command.cancel });
      } else if (command.allow) {
        const entry = waiting.shift();
        entry?.resolve({ outcome: { outcome: "selected", optionId: command.allow } });
      } else if (command.exit) {
        break;
      }
    }
  });
process.exit(0);
