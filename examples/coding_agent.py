"""A coding agent whose context ctxpack manages: a stored, managed session behind the client.

The agent loop is the one Anthropic's tutorials show (send the whole history, run the tools the
model asks for, append their results, send again); the only change is the client, wrapped with
a managed ``Session``: tool outputs are filtered as they arrive, old ones cleared and the history
compacted so that every request fits the window, with the prompt cache asked for. The session
lives in a store, so the loop can move to another process mid-task (here, every third step
runs on a "new replica" that opens the session afresh), and a tool output the model needs again
is read back with the session's retrieve tool.

The model is a mock that plays a scripted task on this repository, offline (it reads files,
greps, reads one output back, and answers), and checks that every prompt fits its window, as
the API would. Run it from the repository root:

    python examples/coding_agent.py --store sqlite:///agent-sessions.db
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2

import ctxpack

WINDOW = 8_000  # the model's context window, prompt and reply together
MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a coding agent. Use bash to read the repository; answer in one paragraph."
TASK = "Where does ctxpack decide which tool outputs a managed session clears?"
ROOT = Path(__file__).resolve().parents[1]
# The scripted task: the commands the mock model runs, one per step.
SCRIPT = [
    "ls ctxpack",
    "ls ctxpack/managed",
    "cat ctxpack/managed/_policy.py",
    "grep -rn 'def clear' ctxpack/managed ctxpack/editing",
    "cat ctxpack/editing/_clear.py",
    "cat ctxpack/managed/_window.py",
    "grep -rn 'expected_resends' ctxpack",
    "cat ctxpack/session/_render.py",
    "cat ctxpack/managed/_state.py",
    "grep -rn 'clear_at' ctxpack docs/guides/long-sessions.md",
    "cat ctxpack/editing/_compact.py",
    "cat ctxpack/managed/_compaction.py",
]


class ScriptedModel:
    """The mock API: checks each prompt against the window, then plays the next step."""

    def __init__(self) -> None:
        self.steps: Iterator[str] = iter(SCRIPT)
        self.counter = ctxpack.get_counter(counter="cl100k_base")
        self.prompt_tokens: list[int] = []
        self.asked_back = False

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        # The prompt's texts alone, without framing: less than the API counts, so a prompt
        # passing the window here would surely be refused there.
        texts = [*_texts(body.get("system")), *_texts(body["messages"])]
        tokens = sum(self.counter.count(text) for text in texts)
        if tokens + body["max_tokens"] > WINDOW:
            return httpx2.Response(400, json={"type": "error", "error": {"message": "too long"}})
        self.prompt_tokens.append(tokens)
        return httpx2.Response(200, json=self.reply(body))

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        step = len(self.prompt_tokens)
        marker = _artifact_marker(body["messages"])
        if marker and not self.asked_back:
            # Read back an output the filters shortened, as a model would for a detail it lacks.
            self.asked_back = True
            call = {"artifact": marker, "regex": "clear", "context": 1}
            return _tool_use(step, "retrieve_original", call)
        command = next(self.steps, None)
        if command is None:
            text = "Clearing is decided in ctxpack/managed (the window policy) and ctxpack/editing."
            return _message([{"type": "text", "text": text}], "end_turn")
        return _tool_use(step, "bash", {"command": command})


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for key in ("text", "content"):
            yield from _texts(value.get(key))
        if "input" in value:
            yield json.dumps(value["input"])


def _tool_use(step: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": arguments}
    return _message([{"type": "text", "text": f"Step {step}."}, block], "tool_use")


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _artifact_marker(messages: list[dict[str, Any]]) -> str | None:
    """The id of an original a shortened tool output names, if the prompt holds one."""
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            text = json.dumps(block.get("content", ""))
            if block.get("type") == "tool_result" and "retrieve_original" in text:
                start = text.find("artifact ")
                if start >= 0:
                    return text[start + len("artifact ") :].split()[0].strip("\"'.,)")
    return None


def bash(command: str) -> str:
    """Run a read-only command in the repository (the scripted ones)."""
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
    return (done.stdout + done.stderr)[:60_000]


def replica(store: str, model: ScriptedModel) -> tuple[ctxpack.Session, Any]:
    """One process of the agent: the session opened from the store, the client wrapped."""
    session = ctxpack.Session.open(
        "task-1", store=store, model=MODEL, counter="cl100k_base", window=WINDOW
    )
    raw = anthropic.Anthropic(
        api_key="offline",
        base_url="http://mock.invalid",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
    )
    return session, ctxpack.wrap_anthropic(raw, session=session)


def run(store: str) -> dict[str, Any]:
    model = ScriptedModel()
    history: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    session, client = replica(store, model)
    for step in range(30):
        if step and step % 3 == 0:
            session, client = replica(store, model)  # the loop moves to another process
        response = client.messages.create(
            model=MODEL,
            max_tokens=1_000,
            system=SYSTEM,
            messages=history,
            tools=[
                {
                    "name": "bash",
                    "description": "Run a shell command in the repository.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"command": {"type": "string"}},
                        "required": ["command"],
                    },
                }
            ],
            cache_control={"type": "ephemeral"},
        )
        history.append({"role": "assistant", "content": response.content})
        calls = [block for block in response.content if block.type == "tool_use"]
        if not calls:
            break
        results = []
        for call in calls:
            if call.name == "retrieve_original":
                output = session.handle(call)  # the session answers its own tool
            else:
                output = bash(call.input["command"])
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": output})
        history.append({"role": "user", "content": results})
    edits = [e.action for e in session.window_state.events]
    return {
        "requests": len(model.prompt_tokens),
        "largest_prompt_text_tokens": max(model.prompt_tokens),
        "raw_history_tokens": ctxpack.count_tokens(
            ctxpack.from_anthropic(history, system=SYSTEM), counter="cl100k_base"
        ),
        "edits": {action: edits.count(action) for action in sorted(set(edits))},
        "read_back": model.asked_back,
        "answer": history[-1]["content"][0].text,
        "transcript": len(session.transcript()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a session store URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report = run(args.store or f"sqlite:///{folder}/agent.db")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
