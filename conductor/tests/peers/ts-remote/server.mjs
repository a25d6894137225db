// The official TypeScript SDK's `AcpServer` (2.4, `/experimental/server` with the Node adapters
// of `/experimental/node` and `ws` for upgrades) hosting `agent.mjs`, a new agent per
// connection, on 127.0.0.1 (an ephemeral port): both profiles at `/acp`. Prints the URL on
// stdout. `--tls-cert FILE --tls-key FILE` serve https/wss; with `ACP_TOKEN` set, requests
// must carry `Authorization: Bearer ACP_TOKEN` (the SDK leaves authentication to its host;
// this is the host's check).
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { WebSocketServer } from "ws";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import {
  createNodeHttpHandler,
  createNodeWebSocketUpgradeHandler,
} from "@agentclientprotocol/sdk/experimental/node";
import { makeAgent } from "./agent.mjs";

const flag = (name) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const [cert, key] = [flag("--tls-cert"), flag("--tls-key")];
const token = process.env.ACP_TOKEN;
const authorized = (req) => !token || req.headers.authorization === `Bearer ${token}`;

const acp = new AcpServer({ createAgent: () => makeAgent() });
const handle = createNodeHttpHandler(acp);
const upgrade = createNodeWebSocketUpgradeHandler(acp, new WebSocketServer({ noServer: true }));
const serve = (req, res) => {
  if (!authorized(req)) {
    res.writeHead(401, { "content-type": "text/plain" });
    res.end("Unauthorized");
    return;
  }
  handle(req, res);
};
const server = cert ? https.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, serve) : http.createServer(serve);
server.on("upgrade", (req, socket, head) => {
  if (!authorized(req)) {
    socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n");
    return;
  }
  upgrade(req, socket, head);
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  console.log(`${cert ? "https" : "http"}://127.0.0.1:${port}/acp`);
});
process.on("SIGTERM", () => {
  acp.close().finally(() => process.exit(0));
});
