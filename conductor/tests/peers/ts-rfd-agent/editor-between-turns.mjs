// An ACP editor written with the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4) that
// watches what arrives between turns. It runs the agent command line it is given (a
// conductor, say), opens sessions A and B, and sends each its prompt given after `--` (`A=TEXT`
// or `B=TEXT`, at once, without waiting); it waits until `WAIT` updates whose text starts
// with `reminder:` have arrived (the first argument after `--` is `WAIT`), then prompts A
// with `hello` and waits for that answer. It prints one JSON line per event, in the order the
// SDK handed them over: `{"event": "answer", "session": "A", "stopReason": …}` and
// `{"event": "update", "session": "A", "kind": …, "text": …}`.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const split = process.argv.indexOf("--");
const [command, ...args] = process.argv.slice(2, split);
const [wait, ...steps] = process.argv.slice(split + 1);

const names = new Map();
let reminders = 0;
let remindersArrived = () => {};
const allReminders = new Promise((resolve) => {
  remindersArrived = resolve;
});
const print = (event) => console.log(JSON.stringify(event));

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
await client()
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    const text = update.content?.type === "text" ? update.content.text : null;
    print({
      event: "update",
      session: names.get(params.sessionId) ?? params.sessionId,
      kind: update.sessionUpdate,
      text,
    });
    if (text?.startsWith("reminder:") && ++reminders >= Number(wait)) {
      remindersArrived();
    }
  })
  .connectWith(stream, async (cx) => {
    await cx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const ids = {};
    for (const name of ["A", "B"]) {
      const { sessionId } = await cx.request(methods.agent.session.new, {
        cwd: "/tmp",
        mcpServers: [],
      });
      ids[name] = sessionId;
      names.set(sessionId, name);
    }
    const prompt = async (name, text) => {
      const answer = await cx.request(methods.agent.session.prompt, {
        sessionId: ids[name],
        prompt: [{ type: "text", text }],
      });
      print({ event: "answer", session: name, stopReason: answer.stopReason });
    };
    const turns = steps.map((step) => prompt(step.slice(0, 1), step.slice(2)));
    await Promise.all(turns);
    const late = setTimeout(() => {
      print({ event: "timeout", reminders });
      process.exit(3);
    }, 20000);
    await allReminders;
    clearTimeout(late);
    await prompt("A", "hello");
  });
agent.stdin.end();
