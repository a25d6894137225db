// An ACP agent on the official TypeScript SDK 2.4 (`@agentclientprotocol/sdk`), driven by
// keywords as sacp's test agent is. Run directly, it serves stdio; `server.mjs` serves it over
// the SDK's remote transports. Prompts:
// - `stream N`: N chunks `chunk 1` … `chunk N`;
// - `permission`: asks the client, says `permission: OPTION` (or `permission: cancelled`);
// - `read PATH`: reads PATH through the client (`fs/read_text_file`), says `read: CONTENT`;
// - `wait`: says `waiting`, then ends `cancelled` when the client cancels the session;
// - anything else: echoed.
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { agent, methods, ndJsonStream } from "@agentclientprotocol/sdk";

/** A new agent: one per connection, with sessions of its own. */
export function makeAgent() {
  let count = 0;
  const waiting = new Map();
  const say = (client, sessionId, text) =>
    client.notify(methods.client.session.update, {
      sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
    });
  return agent()
    .onRequest(methods.agent.initialize, async () => ({
      protocolVersion: 1,
      agentCapabilities: {},
      agentInfo: { name: "ts-remote-agent", version: "0.0.0" },
    }))
    .onRequest(methods.agent.session.new, async () => {
      count += 1;
      return { sessionId: `ts-session-${count}` };
    })
    .onNotification(methods.agent.session.cancel, async ({ params }) => {
      waiting.get(params.sessionId)?.();
    })
    .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
      const { sessionId } = params;
      const text = params.prompt.map((block) => block.text ?? "").join(" ");
      const [keyword, arg] = text.split(" ");
      if (keyword === "stream") {
        for (let i = 1; i <= Number(arg); i++) await say(client, sessionId, `chunk ${i}`);
      } else if (keyword === "permission") {
        const answer = await client.request(methods.client.session.requestPermission, {
          sessionId,
          toolCall: { toolCallId: "call-1", title: "write a file" },
          options: [
            { optionId: "allow", name: "Allow", kind: "allow_once" },
            { optionId: "reject", name: "Reject", kind: "reject_once" },
          ],
        });
        const outcome = answer.outcome;
        await say(client, sessionId, `permission: ${outcome.outcome === "selected" ? outcome.optionId : outcome.outcome}`);
      } else if (keyword === "read") {
        const file = await client.request(methods.client.fs.readTextFile, { sessionId, path: arg });
        await say(client, sessionId, `read: ${file.content}`);
      } else if (keyword === "wait") {
        const cancelled = new Promise((resolve) => waiting.set(sessionId, resolve));
        await say(client, sessionId, "waiting");
        await cancelled;
        waiting.delete(sessionId);
        return { stopReason: "cancelled" };
      } else {
        await say(client, sessionId, text);
      }
      return { stopReason: "end_turn" };
    });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  makeAgent().connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
}
