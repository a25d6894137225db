// An ACP v2 agent written with the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4,
// entry `/experimental/v2`), as its users write one. It acknowledges a prompt with a new user
// message id and runs the turn in updates: the user message, `running`, what the prompt asks
// for, and idle with the stop reason. Prompts:
// - `full`: a chunk, a plan, a tool call (pending), a permission asked for it with title and
//   subject, the call in progress with a content chunk, completed, and a chunk naming the
//   option chosen;
// - `wait`: a chunk `waiting`, then waits for `session/cancel` (idle `cancelled`);
// - anything else: echoed as one chunk.
import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

const cancels = new Map();
let count = 0;

async function turn(client, sessionId, messageId, prompt) {
  const update = (u) => client.notify(methods.client.session.update, { sessionId, update: u });
  const reply = randomUUID();
  const say = (text) =>
    update({ sessionUpdate: "agent_message_chunk", messageId: reply, content: { type: "text", text } });
  await update({ sessionUpdate: "user_message", messageId, content: prompt });
  await update({ sessionUpdate: "state_update", state: "running" });
  const text = prompt.find((b) => b.type === "text")?.text ?? "";
  let stopReason = "end_turn";
  if (text === "full") {
    await say("looking");
    await update({
      sessionUpdate: "plan_update",
      plan: {
        type: "items",
        planId: "plan-1",
        entries: [
          { content: "read the file", priority: "high", status: "in_progress" },
          { content: "edit it", priority: "medium", status: "pending" },
        ],
      },
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "call-1", title: "Edit src/main.rs", kind: "edit", status: "pending" });
    const answer = await client.request(methods.client.session.requestPermission, {
      sessionId,
      title: "Edit src/main.rs?",
      subject: { type: "tool_call", toolCall: { toolCallId: "call-1" } },
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "in_progress" });
    await update({
      sessionUpdate: "tool_call_content_chunk",
      toolCallId: "call-1",
      content: { type: "content", content: { type: "text", text: "edited" } },
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "call-1", status: "completed" });
    const chosen = answer.outcome.outcome === "selected" ? answer.outcome.optionId : answer.outcome.outcome;
    await say(`chose ${chosen}`);
  } else if (text === "wait") {
    await say("waiting");
    await new Promise((resolve) => cancels.set(sessionId, resolve));
    stopReason = "cancelled";
  } else {
    await say(text);
  }
  await update({ sessionUpdate: "state_update", state: "idle", stopReason });
}

agent({ name: "ts-v2-agent" })
  .onRequest(methods.agent.initialize, async () => ({
    protocolVersion: 2,
    info: { name: "ts-v2-agent", version: "0.0.0" },
    capabilities: {},
  }))
  .onRequest(methods.agent.session.new, async () => ({ sessionId: `ts-session-${++count}` }))
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const messageId = randomUUID();
    // The acknowledgement goes first; the turn runs behind it.
    setImmediate(() => {
      turn(client, params.sessionId, messageId, params.prompt).catch((e) => {
        console.error(`ts-v2-agent: the turn failed: ${e}`);
      });
    });
    return { messageId };
  })
  .onNotification(methods.agent.session.cancel, async ({ params }) => {
    cancels.get(params.sessionId)?.();
    cancels.delete(params.sessionId);
  })
  .connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
