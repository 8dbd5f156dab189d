"""Assistant turns holding the results of tools the provider ran, as Anthropic returns them: a
web fetch and an MCP server's tool, each followed by the user's next message."""

from __future__ import annotations

from typing import Any


def fetch_turn(k: int, text: str) -> list[dict[str, Any]]:
    """A web fetch of page ``k`` whose document holds ``text``, and the user going on."""
    document = {
        "type": "document",
        "title": f"Page {k}",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
        "citations": {"enabled": False},
    }
    result = {
        "type": "web_fetch_result",
        "url": f"https://example.com/{k}",
        "retrieved_at": "2025-08-25T10:30:00Z",
        "content": document,
    }
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Fetching page {k}."},
                {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{k}",
                    "name": "web_fetch",
                    "input": {"url": f"https://example.com/{k}"},
                },
                {
                    "type": "web_fetch_tool_result",
                    "tool_use_id": f"srvtoolu_{k}",
                    "content": result,
                },
            ],
        },
        {"role": "user", "content": f"Good, go on after page {k}."},
    ]


def mcp_turn(k: int, text: str) -> list[dict[str, Any]]:
    """An MCP server's ``search_issues`` answering ``text``, and the user going on."""
    return [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "mcp_tool_use",
                    "id": f"mcptoolu_{k}",
                    "name": "search_issues",
                    "server_name": "tracker",
                    "input": {"q": f"bug {k}"},
                },
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": f"mcptoolu_{k}",
                    "is_error": False,
                    "content": [{"type": "text", "text": text}],
                },
                {"type": "text", "text": f"Issues {k} listed."},
            ],
        },
        {"role": "user", "content": f"Now the tracker after {k}."},
    ]
