"""An ACP v1 editor on the official Python SDK (`agent-client-protocol` 0.12.1).

It runs the agent command line it is given (a conductor, say), initializes for v1, opens a
session and sends the prompts given after `--`. For each it prints one line: the JSON list of
the agent message chunks' texts. When `initialize` fails it prints
`["initialize failed CODE DATA"]` instead, and stops.
"""

import asyncio
import json
import sys

import acp
from acp import RequestError, text_block


class Editor:
    def __init__(self) -> None:
        self.said: list[str] = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        return {"outcome": {"outcome": "selected", "optionId": options[0].option_id}}

    async def session_update(self, session_id, update, **kwargs):
        if getattr(update, "session_update", None) == "agent_message_chunk":
            content = update.content
            if getattr(content, "type", None) == "text":
                self.said.append(content.text)

    def on_connect(self, conn) -> None:
        pass


async def main() -> None:
    split = sys.argv.index("--")
    command, args = sys.argv[1], sys.argv[2:split]
    prompts = sys.argv[split + 1 :]
    editor = Editor()
    async with acp.spawn_agent_process(editor, command, *args) as (conn, _process):
        try:
            await conn.initialize(protocol_version=1)
        except RequestError as e:
            print(json.dumps([f"initialize failed {e.code} {json.dumps(e.data, separators=(',', ':'))}"]))
            return
        session = await conn.new_session(cwd="/tmp")
        for text in prompts:
            editor.said = []
            await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
            print(json.dumps(editor.said), flush=True)


asyncio.run(main())
