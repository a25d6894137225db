// An ACP editor on the official TypeScript SDK 2.4 that runs one script over the transport it
// is told: `stdio COMMAND ARGS...` (the agent as a child process), `http URL`
// (`createHttpStream`, `/experimental/http-client`) or `ws URL` (`createWebSocketStream`,
// `/experimental/ws-client`, with `ws`). With `ACP_TOKEN` set it sends
// `Authorization: Bearer ACP_TOKEN`. The script: initialize, a session, then the prompts
// `stream 5`, `permission` (it allows), `read /notes.txt` (it serves that file), `wait` (it
// cancels once `waiting` came, after whatever prefix a proxy wrote). One JSON line per prompt: [prompt, stopReason, ...what the
// agent said] (its thoughts as `thought: …`, its tool calls as `tool: TITLE`). With
// `ACP_VANISH_AT=TEXT` it kills itself (SIGKILL) when the agent says TEXT.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import WebSocket from "ws";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [mode, target, ...rest] = process.argv.slice(2);
const headers = process.env.ACP_TOKEN ? { Authorization: `Bearer ${process.env.ACP_TOKEN}` } : {};
let child;
let stream;
let deleted;
if (mode === "stdio") {
  child = spawn(target, rest, { stdio: ["pipe", "pipe", "inherit"] });
  stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
} else if (mode === "http") {
  // The DELETE that ends the connection, once sent (see the end).
  const tracked = (input, init) => {
    const response = globalThis.fetch(input, init);
    if (init?.method === "DELETE") deleted = response;
    return response;
  };
  stream = createHttpStream(target, { headers, fetch: tracked });
} else if (mode === "ws") {
  stream = createWebSocketStream(target, { headers, WebSocket });
} else {
  console.error("usage: editor.mjs stdio COMMAND... | http URL | ws URL");
  process.exit(2);
}

let said = [];
let waiting;
await client()
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      said.push(update.content.text);
      if (update.content.text.endsWith("waiting")) waiting?.();
      // An editor that vanishes mid-turn: killed, nothing said or closed.
      if (update.content.text === process.env.ACP_VANISH_AT) process.kill(process.pid, "SIGKILL");
    } else if (update.sessionUpdate === "agent_thought_chunk" && update.content.type === "text") {
      said.push(`thought: ${update.content.text}`);
    } else if (update.sessionUpdate === "tool_call") {
      said.push(`tool: ${update.title}`);
    }
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
    if (params.path !== "/notes.txt") throw new Error(`no file ${params.path}`);
    return { content: "a note from the editor" };
  })
  .connectWith(stream, async (cx) => {
    await cx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false } },
    });
    const { sessionId } = await cx.request(methods.agent.session.new, { cwd: "/tmp", mcpServers: [] });
    const prompt = async (text) => {
      said = [];
      const { stopReason } = await cx.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text }],
      });
      console.log(JSON.stringify([text, stopReason, ...said]));
    };
    for (const text of ["stream 5", "permission", "read /notes.txt"]) await prompt(text);
    const started = new Promise((resolve) => { waiting = resolve; });
    const turn = prompt("wait");
    await started;
    await cx.notify(methods.agent.session.cancel, { sessionId });
    await turn;
  });
if (child) child.stdin.end();
// `connectWith` ends an HTTP transport without waiting for its DELETE: wait for it (2 s at
// most), or exiting now could cut it off, and the server would keep the connection (and its
// chain) until it went idle.
if (mode === "http") {
  const until = Date.now() + 2000;
  while (!deleted && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  await deleted?.catch(() => {});
}
process.exit(0);
