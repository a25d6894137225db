// An ACP editor written with the official TypeScript SDK's `/unstable` entry
// (`@agentclientprotocol/sdk` 2.4) that drives ACP's unstable methods through the agent
// command line it is given (a conductor, say): it opens a session, prompts it, forks it
// (`session/fork`), prompts the fork, and prompts `elicit` (the agent then asks it
// `elicitation/create`, which it answers with `{"name": "TypeScript"}`). It prints one JSON
// line per step: what the agent said in a turn, the fork, the elicitation it was asked.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const [command, ...args] = process.argv.slice(2);
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const out = (line) => console.log(JSON.stringify(line));
let said = [];
await client()
  .onRequest(methods.client.elicitation.create, ({ params }) => {
    out(["elicitation", params.mode, params.message, params.sessionId !== undefined]);
    return { action: "accept", content: { name: "TypeScript" } };
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      said.push(update.content.text);
    }
  })
  .connectWith(stream, async (cx) => {
    await cx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { elicitation: { form: {} } },
    });
    const prompt = async (sessionId, text) => {
      said = [];
      const { stopReason } = await cx.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      out([text, stopReason, ...said]);
    };
    const { sessionId } = await cx.request(methods.agent.session.new, { cwd: "/tmp", mcpServers: [] });
    await prompt(sessionId, "remember this");
    const fork = await cx.request(methods.agent.session.fork, {
      sessionId,
      cwd: "/tmp/fork",
      mcpServers: [],
    });
    out(["forked", fork.sessionId !== sessionId, fork._meta?.forkedFrom === sessionId]);
    await prompt(fork.sessionId, "setup");
    await prompt(sessionId, "elicit");
  });
agent.stdin.end();
