// An ACP agent written with the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4,
// entry `/unstable`), as its users write one. It declares `mcpCapabilities.acp` and calls the
// `{"type": "acp"}` MCP servers of its sessions with the SDK's `McpOverAcpCaller` (stateless
// `mcp/message`, MCP 2026-07-28). Prompts:
// - `tools`: lists each server's tools ("NAME: a, b");
// - `call NAME TOOL JSON`: calls a tool ("NAME.TOOL: text [N progress]", or
//   "NAME.TOOL failed: MCP error CODE: message" for an inner MCP error);
// - anything else: echoed.
import { Readable, Writable } from "node:stream";
import {
  agent,
  isMcpServerAcp,
  McpOverAcpCaller,
  methods,
  ndJsonStream,
} from "@agentclientprotocol/sdk/unstable";

const caller = new McpOverAcpCaller({ clientInfo: { name: "ts-rfd-agent", version: "0.0.0" } });
const sessions = new Map();
let count = 0;

async function run(text, servers, request) {
  const words = text.split(" ");
  if (text === "tools") {
    if (servers.length === 0) return ["no MCP servers"];
    const lines = [];
    for (const server of servers) {
      const outcome = await request(server.serverId, "tools/list", {});
      lines.push(
        "error" in outcome
          ? `${server.name}: cannot list its tools: ${outcome.error.message}`
          : `${server.name}: ${outcome.result.tools.map((t) => t.name).join(", ")}`,
      );
    }
    return lines;
  }
  if (words[0] === "call" && words.length >= 4) {
    const [, name, tool] = words;
    const args = JSON.parse(words.slice(3).join(" "));
    const server = servers.find((s) => s.name === name);
    if (!server) return [`no MCP server named ${name}`];
    let progress = 0;
    const outcome = await request(
      server.serverId,
      "tools/call",
      { name: tool, arguments: args, _meta: { progressToken: "p-1" } },
      { onNotification: (n) => { if (n.method === "notifications/progress") progress += 1; } },
    );
    if ("error" in outcome) {
      return [`${name}.${tool} failed: MCP error ${outcome.error.code}: ${outcome.error.message} [${progress} progress]`];
    }
    const said = outcome.result.content.map((c) => c.text ?? JSON.stringify(c)).join(" ");
    const error = outcome.result.isError ? " (error)" : "";
    return [`${name}.${tool}: ${said}${error} [${progress} progress]`];
  }
  return [text];
}

agent()
  .onNotification(methods.agent.mcp.message, caller.handleNotification)
  .onRequest(methods.agent.initialize, async () => ({
    protocolVersion: 1,
    agentCapabilities: { mcpCapabilities: { acp: true } },
    agentInfo: { name: "ts-rfd-agent", version: "0.0.0" },
  }))
  .onRequest(methods.agent.session.new, async ({ params }) => {
    count += 1;
    const sessionId = `ts-session-${count}`;
    sessions.set(sessionId, (params.mcpServers ?? []).filter(isMcpServerAcp));
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.map((block) => block.text ?? "").join(" ");
    const servers = sessions.get(params.sessionId) ?? [];
    const request = (serverId, method, mcpParams, options) =>
      caller.request(client, serverId, method, mcpParams, options);
    for (const line of await run(text, servers, request)) {
      await client.notify(methods.client.session.update, {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: line } },
      });
    }
    return { stopReason: "end_turn" };
  })
  .connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
