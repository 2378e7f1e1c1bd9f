#!/usr/bin/env python3
"""Drive an MCP stdio server with the Python SDK's high-level `Client` (mcp==2.3.0) in one of
its protocol modes and print what it saw.

Usage (run with the venv that has the SDK):
    .tools/venv/bin/python tests/clients/sdk_era_client.py --mode MODE --plan PLAN.json -- COMMAND [ARGS...]

MODE is the SDK's `Client(mode=...)`: `legacy` (initialize handshake), `auto` (probe
`server/discover`, fall back to initialize) or `2026-07-28` (stateless requests with `_meta`,
no probe). `--plan -` reads the plan from stdin: a JSON list of steps, run in order:

    {"op": "list_tools"}                      -> the tool names
    {"op": "call", "name": N, "arguments": {...}, "progress"?: true}
        -> the CallToolResult as a dict (sampling/elicitation/roots requests of the server,
           whether server-to-client requests or input_required results, are answered by the
           callbacks below), or {"error": {code, message, data?}}; with "progress": true the
           progress events under "progress"
    {"op": "cancel", "name": N, "arguments": {...}, "after_s": S}
        -> starts the call and cancels it after S seconds: {"cancelled": true} when it was
           still running
    {"op": "list_change", "trigger": {call step}, "timeout_s"?: S}
        -> opens a `subscriptions/listen` stream for tool list changes (2026-07-28; in legacy
           mode waits for notifications/tools/list_changed instead), makes the trigger call
           and waits for the change: {"changed": bool, "tools": [names after the change]}
    {"op": "wait", "seconds": S}

A failing step records {"exception": "<type>: <msg>"} and later steps still run.

Output, one JSON object on stdout:
    {"protocolVersion", "serverInfo"?, "steps": [...], "notifications": [...], "callbacks": [...]}
where "callbacks" lists the sampling/elicitation/roots requests the client answered.

Callbacks: elicitation accepts with {"ok": true}; sampling answers the text
"sampled: fixed answer"; roots/list returns one root file:///tmp.

Exit status: 0 when it ran, 1 when connecting failed (reason on stderr).
"""

import argparse
import json
import os
import sys

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters

CALLBACKS = []
NOTIFICATIONS = []


def dump(model) -> dict:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def on_elicit(context, params):
    CALLBACKS.append({"method": "elicitation/create", "message": params.message})
    return types.ElicitResult(action="accept", content={"ok": True})


async def on_sample(context, params):
    CALLBACKS.append({"method": "sampling/createMessage"})
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled: fixed answer"),
        model="fixture-model",
        stop_reason="endTurn",
    )


async def on_list_roots(context):
    CALLBACKS.append({"method": "roots/list"})
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])


async def on_message(message) -> None:
    if isinstance(message, Exception):
        NOTIFICATIONS.append({"transportError": describe(message)})
    else:
        NOTIFICATIONS.append(dump(message))


async def step_list_tools(client: Client, step: dict):
    names = []
    cursor = None
    while True:
        result = await client.list_tools(cursor=cursor, cache_mode="bypass")
        names.extend(tool.name for tool in result.tools)
        cursor = result.next_cursor
        if cursor is None:
            return names


async def step_call(client: Client, step: dict):
    events = []
    callback = None
    if step.get("progress"):

        async def callback(progress, total, message):
            events.append({"progress": progress, "total": total})

    try:
        result = await client.call_tool(step["name"], step.get("arguments"), progress_callback=callback)
    except MCPError as exc:
        return {"error": dump(exc.error)}
    out = dump(result)
    if step.get("progress"):
        out["progress"] = events
    return out


async def step_cancel(client: Client, step: dict):
    finished = False
    with anyio.move_on_after(float(step["after_s"])):
        await client.call_tool(step["name"], step.get("arguments"))
        finished = True
    return {"cancelled": not finished}


async def step_list_change(client: Client, step: dict):
    timeout = float(step.get("timeout_s", 15))
    trigger = step["trigger"]
    changed = False
    if client.protocol_version == "2026-07-28":
        async with client.listen(tools_list_changed=True) as sub:
            await step_call(client, trigger)
            with anyio.move_on_after(timeout):
                async for event in sub:
                    changed = type(event).__name__ == "ToolsListChanged"
                    break
    else:
        seen = len(NOTIFICATIONS)
        await step_call(client, trigger)
        with anyio.move_on_after(timeout):
            while not changed:
                changed = any(
                    n.get("method") == "notifications/tools/list_changed" for n in NOTIFICATIONS[seen:]
                )
                await anyio.sleep(0.05)
    return {"changed": changed, "tools": await step_list_tools(client, {})}


async def step_wait(client: Client, step: dict):
    await anyio.sleep(float(step.get("seconds", 0.1)))
    return None


STEPS = {
    "list_tools": step_list_tools,
    "call": step_call,
    "cancel": step_cancel,
    "list_change": step_list_change,
    "wait": step_wait,
}


async def run(mode: str, command: list[str], steps: list[dict]) -> dict:
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    client = Client(
        params,
        mode=mode,
        sampling_callback=on_sample,
        elicitation_callback=on_elicit,
        list_roots_callback=on_list_roots,
        message_handler=on_message,
        read_timeout_seconds=60,
    )
    async with client:
        out = {"protocolVersion": client.protocol_version}
        if client.server_info is not None:
            out["serverInfo"] = dump(client.server_info)
        results = []
        for step in steps:
            handler = STEPS.get(step.get("op"))
            try:
                results.append(await handler(client, step) if handler else {"exception": f"unknown op {step!r}"})
            except Exception as exc:  # recorded, the next step still runs
                results.append({"exception": describe(exc)})
        out.update(steps=results, notifications=NOTIFICATIONS, callbacks=CALLBACKS)
        return out


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print("usage: sdk_era_client.py --mode MODE --plan PLAN -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--plan", required=True)
    opts = parser.parse_args(argv[:split])
    text = sys.stdin.read() if opts.plan == "-" else open(opts.plan, encoding="utf-8").read()
    plan = json.loads(text)
    try:
        output = anyio.run(run, opts.mode, argv[split + 1 :], plan)
    except BaseException as exc:  # spawn or connect failure (anyio wraps it in groups)
        if isinstance(exc, KeyboardInterrupt):
            raise
        print(f"sdk_era_client: startup failure: {describe(exc)}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(output) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
