"""Shared pieces of the selection tests: a small repository, the fixture session, fake clients."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"

AUTH_TS = """\
import { Session } from "./session";

export function refreshToken(session: Session): Session {
  const token = session.token;
  if (token.expired) {
    return { ...session, token: renew(token) };
  }
  return session;
}

function renew(token: Token): Token {
  return { value: token.value + "'", expired: false };
}
"""

AUTH_TEST_TS = """\
import { refreshToken } from "../src/auth";

describe("auth", () => {
  it("keeps a fresh token", () => {
    expect(refreshToken(fresh()).token).toBe(fresh().token);
  });

  it("refreshes expired token", () => {
    const session = expired();
    const out = refreshToken(session);
    expect(out.token.expiresAt).toBeDefined();
  });
});
"""


def session_messages() -> list[dict[str, Any]]:
    """The fixture session (a fresh copy)."""
    data = json.loads((FIXTURES / "session.json").read_text("utf-8"))
    return copy.deepcopy(data["messages"])


def make_repo(root: Path) -> Path:
    """A small TypeScript repository, with files no selector should list."""
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "auth.ts").write_text(AUTH_TS)
    (root / "src" / "session.ts").write_text("export interface Session { token: Token }\n")
    (root / "tests" / "auth.test.ts").write_text(AUTH_TEST_TS)
    (root / "README.md").write_text("# demo\n\nSessions use bearer tokens.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "node_modules" / "lib" / "index.js").write_text("refresh token everywhere\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    return root


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text("utf-8"))
    return data


def openai_response(content: str, *, usage: tuple[int, int] | None = (500, 80)) -> dict[str, Any]:
    """A chat.completions response body whose message content is ``content``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1764489600,
        "model": "small",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return body


def anthropic_response(
    answer: dict[str, Any], *, usage: tuple[int, int] = (500, 80)
) -> dict[str, Any]:
    """A messages response body with one select_context tool call carrying ``answer``."""
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "small",
        "content": [
            {"type": "tool_use", "id": "toolu_test", "name": "select_context", "input": answer}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def answer(**fields: Any) -> dict[str, Any]:
    """A complete answer, as strict structured outputs send it: every field, unset ones empty."""
    base: dict[str, Any] = {
        "include_messages": [],
        "include_files": [],
        "include_tool_results": [],
        "durable_notes": [],
        "omit_reason": "",
        "include_reason": "",
        "uncertain": [],
        "reasons": [],
    }
    return {**base, **fields}


class _Recorder:
    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def create(self, **request: Any) -> Any:
        self.requests.append(copy.deepcopy(request))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


class FakeOpenAI:
    """Answers chat.completions.create with the given replies in turn (an exception is raised)."""

    def __init__(self, *replies: Any) -> None:
        self.recorder = _Recorder(list(replies))
        self.chat = SimpleNamespace(completions=self.recorder)

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.recorder.requests


class FakeAnthropic:
    """Answers messages.create with the given replies in turn (an exception is raised)."""

    def __init__(self, *replies: Any) -> None:
        self.recorder = _Recorder(list(replies))
        self.messages = self.recorder

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.recorder.requests
