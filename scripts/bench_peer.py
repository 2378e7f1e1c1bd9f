"""The peer proxy for scripts/bench: FastMCP's proxy of an `mcpServers` JSON over stdio, the same
object `fastmcp run CONFIG.json` builds (fastmcp.server.create_proxy), plus FastMCP's own
ResponseLimitingMiddleware so it also limits what reaches the client.

    python bench_peer.py CONFIG.json MAX_BYTES     # MAX_BYTES 0 = no middleware

Run with the interpreter of .tools/fastmcp-venv (fastmcp==4.2.3).
"""
import json
import sys

from fastmcp.server import create_proxy
from fastmcp.server.middleware.response_limiting import ResponseLimitingMiddleware

config_path, max_bytes = sys.argv[1], int(sys.argv[2])
with open(config_path, encoding="utf-8") as f:
    config = json.load(f)
server = create_proxy(config)
if max_bytes > 0:
    server.add_middleware(ResponseLimitingMiddleware(max_size=max_bytes))
server.run(transport="stdio", show_banner=False)
