#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into DIR/<target>/: the ACP and MCP messages of the
schema crate's fixtures and, with SACP_SCHEMA_DIR set, of the protocols' documentation examples
(`examples/*/cases.json`), in the form each target reads; and the sample trace beside this
script. Nothing here is committed but this script and the sample trace."""

import glob
import hashlib
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = sys.argv[1]

cases = []
for path in sorted(glob.glob(os.path.join(root, "sacp-schema/tests/fixtures/*.json"))):
    cases += json.load(open(path))
schemas = os.environ.get("SACP_SCHEMA_DIR")
if schemas:
    for path in sorted(glob.glob(os.path.join(schemas, "examples/*/cases.json"))):
        cases += json.load(open(path))


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


lines = []
for i, case in enumerate(cases):
    body = json.dumps(case["json"], separators=(",", ":"))
    put("lossless", body)
    envelope = case.get("envelope")
    message = (
        json.dumps(envelope["json"] if isinstance(envelope, dict) and "json" in envelope else envelope,
                   separators=(",", ":"))
        if envelope
        else json.dumps({"jsonrpc": "2.0", "id": i, "method": "session/x", "params": case["json"]},
                        separators=(",", ":"))
    )
    put("message", message)
    put("envelope", json.dumps({"method": "session/prompt", "params": case["json"]}, separators=(",", ":")))
    lines.append(message)

# Framing and SSE: a limit byte, cut sizes, 0xff, then the stream.
for n in range(0, len(lines), 8):
    chunk = lines[n:n + 8]
    put("framing", bytes([63, 3, 0, 7, 0xff]) + "\n".join(chunk).encode() + b"\n")
    put("framing", bytes([40, 0xff]) + "\r\n".join(chunk).encode() + b"\r\n\n  \n")
    events = "".join(f"data: {line}\n\n" for line in chunk)
    put("sse", bytes([255, 5, 1, 0xff]) + events.encode())
    put("sse", bytes([255, 0xff]) + (": keep-alive\r\n\r\n" + events.replace("\n", "\r")).encode())

trace = open(os.path.join(here, "trace.jsonl")).read()
put("trace_reader", trace)
put("viewer", bytes([5]) + b"41\n\n\n" + trace.encode())
put("viewer", bytes([20]) + b"18446744073709551615" + trace.encode())
