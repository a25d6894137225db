// An ACP editor written with the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4,
// entry `/unstable`) that provides its own MCP server over ACP the RFD's way: registered with
// the SDK's `McpOverAcpProvider` (stateless `mcp/message`, MCP 2026-07-28), declared
// `{"type": "acp"}` in `session/new`. It runs the agent command line it is given (a conductor,
// say), opens a session and sends the prompts given after `--`, printing each agent message
// chunk on its own line of stdout (or, when `initialize` fails, `initialize failed CODE
// DATA`). Its server `tsed` has two tools: `hello` and `steps` (three
// progress notifications, then an answer).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import {
  client,
  McpOverAcpProvider,
  McpProtocolError,
  methods,
  ndJsonStream,
} from "@agentclientprotocol/sdk/unstable";

const split = process.argv.indexOf("--");
const [command, ...args] = process.argv.slice(2, split);
const prompts = process.argv.slice(split + 1);

const provider = new McpOverAcpProvider();
const tools = [
  { name: "hello", inputSchema: { type: "object" } },
  { name: "steps", inputSchema: { type: "object" } },
];

async function serve(mcp) {
  switch (mcp.method) {
    case "server/discover":
      return {
        result: {
          resultType: "complete",
          supportedVersions: ["2026-07-28"],
          capabilities: { tools: {} },
          _meta: { "io.modelcontextprotocol/serverInfo": { name: "tsed", version: "0.0.0" } },
        },
      };
    case "tools/list":
      return { result: { resultType: "complete", tools } };
    case "tools/call": {
      const name = mcp.params?.name;
      if (name === "steps") {
        for (let step = 1; step <= 3; step++) {
          const token = mcp.params?._meta?.progressToken;
          await mcp.notify("notifications/progress", { progressToken: token, progress: step, total: 3 });
        }
      } else if (name !== "hello") {
        throw new McpProtocolError(-32602, `no tool ${name}`);
      }
      const text = `${name} from the TypeScript editor (MCP ${mcp.protocolVersion})`;
      return { result: { resultType: "complete", content: [{ type: "text", text }] } };
    }
    default:
      throw new McpProtocolError(-32601, `Method not found: ${mcp.method}`);
  }
}

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
let said = [];
await client()
  .onRequest(methods.client.mcp.message, provider.handleRequest)
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      said.push(update.content.text);
    }
  })
  .connectWith(stream, async (cx) => {
    try {
      await cx.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    } catch (e) {
      console.log(JSON.stringify([`initialize failed ${e.code} ${JSON.stringify(e.data ?? null)}`]));
      return;
    }
    const server = provider.registerServer(cx, { name: "tsed", handler: serve });
    const { sessionId } = await cx.request(methods.agent.session.new, {
      cwd: "/tmp",
      mcpServers: [server.declaration],
    });
    for (const text of prompts) {
      said = [];
      await cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
      console.log(JSON.stringify(said));
    }
  });
agent.stdin.end();
