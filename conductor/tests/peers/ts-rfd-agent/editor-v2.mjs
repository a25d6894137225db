// An ACP v2 editor written with the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4,
// entry `/experimental/v2`). It runs the agent command line it is given (a conductor, say),
// initializes for v2 (printing `initialize VERSION`, or `initialize failed CODE DATA`), opens a
// session and sends the prompts given after `--`. For each it prints `ack` when the prompt is
// acknowledged, every update of the session as the JSON it arrived as, `permission TITLE
// SUBJECT` for a permission it is asked (it allows), and `stop REASON` at idle. After a
// `waiting` chunk it sends `session/cancel`. Lines are printed in the order their messages
// arrived.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

const split = process.argv.indexOf("--");
const [command, ...args] = process.argv.slice(2, split);
const prompts = process.argv.slice(split + 1);

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const print = (line) => console.log(line);

// What arrived, in order (updates, permissions asked, acknowledgements), and who waits for
// the next.
const arrived = [];
let wake = null;
const arrive = (item) => {
  arrived.push(item);
  wake?.();
};

try {
  await client({ name: "ts-v2-editor" })
    .onRequest(methods.client.session.requestPermission, async ({ params }) => {
      arrive({ line: `permission ${params.title} ${JSON.stringify(params.subject)}` });
      return { outcome: { outcome: "selected", optionId: "allow" } };
    })
    .onNotification(methods.client.session.update, ({ params }) => arrive({ update: params.update }))
    .connectWith(stream, async (cx) => {
      let init;
      try {
        init = await cx.request(methods.agent.initialize, {
          protocolVersion: 2,
          info: { name: "ts-v2-editor", version: "0.0.0" },
          capabilities: {},
        });
      } catch (e) {
        print(`initialize failed ${e.code} ${JSON.stringify(e.data ?? null)}`);
        return;
      }
      print(`initialize ${init.protocolVersion}`);
      const { sessionId } = await cx.request(methods.agent.session.new, { cwd: "/tmp" });
      for (const text of prompts) {
        const acked = cx
          .request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] })
          .then(() => arrive({ line: "ack" }));
        for (;;) {
          while (arrived.length === 0) await new Promise((resolve) => (wake = resolve));
          const { update, line } = arrived.shift();
          if (line) {
            print(line);
            continue;
          }
          print(JSON.stringify(update));
          if (update.sessionUpdate === "agent_message_chunk" && update.content?.text === "waiting") {
            await cx.notify(methods.agent.session.cancel, { sessionId });
          }
          if (update.sessionUpdate === "state_update" && update.state === "idle") {
            print(`stop ${update.stopReason}`);
            await acked;
            break;
          }
        }
      }
    });
} catch (e) {
  print(`failed ${e.code ?? ""} ${e.message}`);
}
agent.stdin.end();
