#!/usr/bin/env python3
"""Drive an MCP stdio server with the real Python MCP SDK (mcp==2.3.0) and print what it saw.

Usage (run with the venv that has the SDK):
    .tools/venv/bin/python tests/clients/sdk_client.py [--mode MODE] --plan PLAN.json -- COMMAND [ARGS...]

MODE `session` (the default) drives the low-level `ClientSession` through an `initialize`
handshake. The other modes drive the high-level `Client(mode=MODE)`: `legacy` (initialize
handshake), `auto` (probe `server/discover`, fall back to initialize) or `2026-07-28`
(stateless requests with `_meta`, no probe). In those modes COMMAND may be one http(s) URL
instead: the SDK's streamable HTTP client connects to a server already listening there.

`--plan -` reads the plan from stdin. The plan is a JSON list of steps, or an
object {"steps": [...]}. Steps run in order:

    {"op": "list_tools"}
        -> list of tools (all pages followed): name, description, inputSchema, outputSchema
           (in the `Client` modes: the tool names)
    {"op": "call", "name": N, "arguments": {...}, "timeout_s"?: float, "progress"?: true}
        -> the CallToolResult as a dict, or {"error": {code, message, data?}} for a
           JSON-RPC error (MCPError). With "progress": true a progress callback is
           registered (so the SDK sends _meta.progressToken) and the received
           progress events are added to the result under "progress". Server requests
           for sampling/elicitation/roots (server-to-client requests, or input_required
           results in 2026-07-28) are answered by the callbacks below.
    {"op": "ping"}                    -> {} on success
    {"op": "wait", "seconds": float}  -> null (lets notifications arrive)

Only in `session` mode:
    {"op": "call_parallel", "calls": [{call step}, ...]}
        -> list of call results, concurrently run, in the plan's order
    {"op": "list_resources" | "list_resource_templates" | "list_prompts" | "list_tools_page",
     "cursor"?: str}
        -> one page of that list as the SDK parsed it (no pages followed)
    {"op": "read_resource" | "subscribe" | "unsubscribe", "uri": U}
    {"op": "get_prompt", "name": N, "arguments"?: {...}}
    {"op": "complete", "ref": {"type": "ref/prompt", "name": N} | {"type": "ref/resource",
     "uri": T}, "argument": {"name", "value"}, "context"?: {...}}
    {"op": "set_level", "level": L}
        -> the result as a dict, or {"error": {code, message, data?}} for a JSON-RPC error

Only in the `Client` modes:
    {"op": "cancel", "name": N, "arguments": {...}, "after_s": S}
        -> starts the call and cancels it after S seconds: {"cancelled": true} when it was
           still running
    {"op": "list_change", "trigger": {call step}, "timeout_s"?: S}
        -> opens a `subscriptions/listen` stream for tool list changes (2026-07-28; otherwise
           waits for notifications/tools/list_changed), makes the trigger call and waits for
           the change: {"changed": bool, "tools": [names after the change]}

A failing step records {"exception": "<type>: <msg>"} and later steps still run.

Output: one JSON object on stdout. In `session` mode:
    {"initialize": {"protocolVersion", "serverInfo", "capabilities", "instructions"?},
     "steps": [...],
     "notifications": [server notifications and transport errors, in arrival order]}
In the `Client` modes:
    {"protocolVersion", "serverInfo"?, "steps": [...], "notifications": [...], "callbacks": [...]}
where "callbacks" lists the sampling/elicitation/roots requests the client answered.

Server-initiated requests are answered by fixed callbacks: elicitation accepts
with {"ok": true}; sampling answers the text "sampled: fixed answer" (model
"fixture-model"); roots/list returns one root file:///tmp.

Exit status: 0 when it ran (even if steps failed), 1 on a startup failure
(spawn or initialize), with the reason on stderr.
"""

import argparse
import json
import os
import sys
import traceback

import anyio
import mcp_types as types
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext

DEFAULT_INIT_TIMEOUT_S = 30.0
CLIENT_MODES = ("legacy", "auto", "2026-07-28")
# The sampling/elicitation/roots requests the client answered, in order.
CALLBACKS = []


def dump(model) -> dict:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------
# Callbacks for server-to-client requests and notifications


async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams):
    CALLBACKS.append({"method": "elicitation/create", "message": params.message})
    return types.ElicitResult(action="accept", content={"ok": True})


async def on_sample(context: ClientRequestContext, params: types.CreateMessageRequestParams):
    CALLBACKS.append({"method": "sampling/createMessage"})
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled: fixed answer"),
        model="fixture-model",
        stop_reason="endTurn",
    )


async def on_list_roots(context: ClientRequestContext):
    CALLBACKS.append({"method": "roots/list"})
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])


class Recorder:
    """Collects server notifications (and transport-level exceptions) in arrival order."""

    def __init__(self):
        self.notifications = []

    async def on_message(self, message) -> None:
        if isinstance(message, Exception):
            self.notifications.append({"transportError": describe(message)})
        else:
            self.notifications.append(dump(message))

    async def on_logging(self, params) -> None:
        # Logging notifications also reach on_message; nothing extra to record.
        pass


RECORDER = Recorder()


# ----------------------------------------------------------------------------
# Steps


async def step_list_tools(session, step: dict):
    tools = []
    cursor = None
    while True:
        if isinstance(session, Client):
            result = await session.list_tools(cursor=cursor, cache_mode="bypass")
            tools.extend(tool.name for tool in result.tools)
        else:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            result = await session.list_tools(params=params)
            tools.extend(tool_entry(tool) for tool in result.tools)
        cursor = result.next_cursor
        if cursor is None:
            return tools


def tool_entry(tool) -> dict:
    entry = {"name": tool.name}
    if tool.description is not None:
        entry["description"] = tool.description
    entry["inputSchema"] = tool.input_schema
    if tool.output_schema is not None:
        entry["outputSchema"] = tool.output_schema
    return entry


async def step_call(session, step: dict):
    progress_events = []
    progress_callback = None
    if step.get("progress"):

        async def progress_callback(progress, total, message):
            event = {"progress": progress, "total": total}
            if message is not None:
                event["message"] = message
            progress_events.append(event)

    options = {"progress_callback": progress_callback}
    if "timeout_s" in step:
        options["read_timeout_seconds"] = step["timeout_s"]
    try:
        result = await session.call_tool(step["name"], step.get("arguments"), **options)
    except MCPError as exc:
        return {"error": dump(exc.error)}
    out = dump(result)
    if step.get("progress"):
        out["progress"] = progress_events
    return out


async def guarded(coro_fn, *args):
    try:
        return await coro_fn(*args)
    except Exception as exc:
        return {"exception": describe(exc)}


async def step_call_parallel(session: ClientSession, step: dict):
    calls = step["calls"]
    results = [None] * len(calls)

    async def run_one(index, call):
        results[index] = await guarded(step_call, session, call)

    async with anyio.create_task_group() as tg:
        for index, call in enumerate(calls):
            tg.start_soon(run_one, index, call)
    return results


async def step_ping(session, step: dict):
    await session.send_ping()
    return {}


async def step_wait(session, step: dict):
    await anyio.sleep(float(step.get("seconds", 0.1)))
    return None


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
        seen = len(RECORDER.notifications)
        await step_call(client, trigger)
        with anyio.move_on_after(timeout):
            while not changed:
                changed = any(
                    n.get("method") == "notifications/tools/list_changed" for n in RECORDER.notifications[seen:]
                )
                await anyio.sleep(0.05)
    return {"changed": changed, "tools": await step_list_tools(client, {})}


def paginated(step: dict):
    cursor = step.get("cursor")
    return types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None


async def rpc(call):
    """Awaits one SDK request: its result as a dict, or {"error": ...} for a JSON-RPC error."""
    try:
        return dump(await call)
    except MCPError as exc:
        return {"error": dump(exc.error)}


async def step_complete(session: ClientSession, step: dict):
    ref = step["ref"]
    if ref["type"] == "ref/prompt":
        reference = types.PromptReference(type="ref/prompt", name=ref["name"])
    else:
        reference = types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
    return await rpc(session.complete(reference, step["argument"], step.get("context")))


SESSION_STEPS = {
    "list_resources": lambda s, st: rpc(s.list_resources(params=paginated(st))),
    "list_resource_templates": lambda s, st: rpc(s.list_resource_templates(params=paginated(st))),
    "list_prompts": lambda s, st: rpc(s.list_prompts(params=paginated(st))),
    "list_tools_page": lambda s, st: rpc(s.list_tools(params=paginated(st))),
    "read_resource": lambda s, st: rpc(s.read_resource(st["uri"])),
    "subscribe": lambda s, st: rpc(s.subscribe_resource(st["uri"])),
    "unsubscribe": lambda s, st: rpc(s.unsubscribe_resource(st["uri"])),
    "get_prompt": lambda s, st: rpc(s.get_prompt(st["name"], st.get("arguments"))),
    "complete": step_complete,
    "set_level": lambda s, st: rpc(s.set_logging_level(st["level"])),
    "call_parallel": step_call_parallel,
}
CLIENT_STEPS = {"cancel": step_cancel, "list_change": step_list_change}
COMMON_STEPS = {"list_tools": step_list_tools, "call": step_call, "ping": step_ping, "wait": step_wait}


async def run_step(session, step: dict):
    op = step.get("op")
    handler = COMMON_STEPS.get(op) or (CLIENT_STEPS if isinstance(session, Client) else SESSION_STEPS).get(op)
    if handler is None:
        return {"exception": f"ValueError: unknown op {op!r}"}
    return await guarded(handler, session, step)


# ----------------------------------------------------------------------------


class StartupError(Exception):
    pass


async def run_client(mode: str, command: list[str], steps: list[dict]) -> dict:
    """Runs `steps` through the high-level `Client` in `mode`; a lone http(s) URL as the command
    connects with the SDK's streamable HTTP client instead of starting a process."""
    if len(command) == 1 and command[0].startswith(("http://", "https://")):
        params = command[0]
    else:
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    client = Client(
        params,
        mode=mode,
        sampling_callback=on_sample,
        elicitation_callback=on_elicit,
        list_roots_callback=on_list_roots,
        message_handler=RECORDER.on_message,
        read_timeout_seconds=60,
    )
    async with client:
        out = {"protocolVersion": client.protocol_version}
        if client.server_info is not None:
            out["serverInfo"] = dump(client.server_info)
        results = [await run_step(client, step) for step in steps]
        out.update(steps=results, notifications=RECORDER.notifications, callbacks=CALLBACKS)
        return out


async def run(mode: str, command: list[str], steps: list[dict], init_timeout_s: float) -> dict:
    if mode in CLIENT_MODES:
        return await run_client(mode, command, steps)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    recorder = RECORDER
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(
            read_stream,
            write_stream,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_list_roots,
            logging_callback=recorder.on_logging,
            message_handler=recorder.on_message,
        ) as session:
            try:
                with anyio.fail_after(init_timeout_s):
                    init = await session.initialize()
            except TimeoutError as exc:
                raise StartupError(f"initialize timed out after {init_timeout_s}s") from exc
            except Exception as exc:
                raise StartupError(f"initialize failed: {describe(exc)}") from exc
            initialize = {
                "protocolVersion": init.protocol_version,
                "serverInfo": dump(init.server_info),
                "capabilities": dump(init.capabilities),
            }
            if init.instructions is not None:
                initialize["instructions"] = init.instructions
            results = []
            for step in steps:
                results.append(await run_step(session, step))
            return {"initialize": initialize, "steps": results, "notifications": recorder.notifications}


def load_plan(path: str) -> list[dict]:
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    plan = json.loads(text)
    if isinstance(plan, dict):
        plan = plan.get("steps", [])
    if not isinstance(plan, list):
        raise ValueError("plan must be a list of steps or an object with 'steps'")
    return plan


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: sdk_client.py [--mode MODE] --plan PLAN.json [--init-timeout S] -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(description="MCP SDK test driver")
    parser.add_argument("--mode", default="session", choices=("session",) + CLIENT_MODES)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--init-timeout", type=float, default=DEFAULT_INIT_TIMEOUT_S)
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        print("sdk_client: no server command given after --", file=sys.stderr)
        return 2
    try:
        steps = load_plan(opts.plan)
    except (OSError, ValueError) as exc:
        print(f"sdk_client: bad plan: {describe(exc)}", file=sys.stderr)
        return 2
    try:
        output = anyio.run(run, opts.mode, command, steps, opts.init_timeout)
    except StartupError as exc:
        print(f"sdk_client: startup failure: {exc}", file=sys.stderr)
        return 1
    except BaseException as exc:  # spawn failure, ExceptionGroup from the transport, ...
        if isinstance(exc, KeyboardInterrupt):
            raise
        startup = _find_startup_error(exc)
        if startup is not None:
            print(f"sdk_client: startup failure: {startup}", file=sys.stderr)
        else:
            print(f"sdk_client: startup failure: {describe(exc)}", file=sys.stderr)
            if not isinstance(exc, OSError):
                traceback.print_exc(file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(output) + "\n")
    sys.stdout.flush()
    return 0


def _find_startup_error(exc: BaseException):
    """anyio task groups wrap exceptions in (nested) ExceptionGroups; dig out a StartupError."""
    if isinstance(exc, StartupError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _find_startup_error(inner)
        if found is not None:
            return found
    return None


if __name__ == "__main__":
    sys.exit(main())
