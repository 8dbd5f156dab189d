"""Seeded Codex-style agent histories in the Responses API's form, for soak tests: a task, then
steps of a reasoning item and one or several parallel calls (``shell_call`` with several
commands, ``apply_patch_call`` creating, updating or deleting a file, ``custom_tool_call``,
``function_call``, a Codex-style ``local_shell_call``, a ``computer_call`` answered by a
screenshot), now and then a web search or an MCP call in the turn, assistant messages
with a ``phase``, and new user instructions."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

Item = dict[str, Any]
# The call items a client runs and answers with a ``{kind}_output`` item.
CALLS = (
    "function_call",
    "custom_tool_call",
    "shell_call",
    "apply_patch_call",
    "local_shell_call",
    "computer_call",
)
WORDS = [
    "parser",
    "token",
    "window",
    "budget",
    "cache",
    "shard",
    "retry",
    "ledger",
    "config",
    "module",
    "client",
]


class AgentHistory:
    """``steps()`` yields each step's assistant turn and the outputs the client sends back
    (a user instruction is a turn of its own, with no outputs)."""

    def __init__(self, seed: int, steps: int, *, log_lines: int = 2_000, write_lines: int = 0):
        self.rng = random.Random(seed)
        self.count = steps
        self.log_lines = log_lines
        self.write_lines = write_lines  # a file this long is written, midway
        self.n = 0

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:05d}"

    def _lines(self, n: int, form: str) -> str:
        return "".join(form.format(i=i, w=self.rng.choice(WORDS)) + "\n" for i in range(n))

    def shell(self) -> tuple[Item, Item]:
        cid, rng = self._id("call"), self.rng
        commands = rng.choice([["pytest -q"], ["ls -la", "git status"], ["cat src/ledger.py"]])
        chunks = []
        for command in commands:
            n = self.log_lines if rng.random() < 0.2 else rng.randint(5, 200)
            failed = command == "pytest -q" and rng.random() < 0.5
            stdout = self._lines(n, "tests/test_{w}.py::test_{i} PASSED")
            stdout += "FAILED tests/test_ledger.py::test_sum - assert 1 == 2\n" if failed else ""
            exit_code = 1 if failed else 0
            chunks.append(
                {
                    "stdout": stdout,
                    "stderr": "",
                    "outcome": {"type": "exit", "exit_code": exit_code},
                }
            )
        action = {"commands": commands, "timeout_ms": 60_000, "max_output_length": 100_000}
        call = {
            "type": "shell_call",
            "id": self._id("sh"),
            "call_id": cid,
            "action": action,
            "status": "completed",
        }
        return call, {"type": "shell_call_output", "call_id": cid, "output": chunks}

    def patch(self, lines: int = 0) -> tuple[Item, Item]:
        cid, rng = self._id("call"), self.rng
        path = f"src/{rng.choice(WORDS)}.py"
        kind = "create_file" if lines else rng.choice(["create_file", "update_file", "delete_file"])
        operation: Item = {"type": kind, "path": path}
        if kind != "delete_file":
            operation["diff"] = self._lines(lines or rng.randint(2, 60), "+{w} = {i}")
        call = {
            "type": "apply_patch_call",
            "id": self._id("apc"),
            "call_id": cid,
            "status": "completed",
            "operation": operation,
        }
        output = {
            "type": "apply_patch_call_output",
            "call_id": cid,
            "status": "completed",
            "output": f"Done {path}",
        }
        return call, output

    def custom(self) -> tuple[Item, Item]:
        cid = self._id("call")
        call = {
            "type": "custom_tool_call",
            "id": self._id("ctc"),
            "call_id": cid,
            "name": "grep",
            "input": "TODO src/",
        }
        output = self._lines(self.rng.randint(1, 300), "src/{w}.py:{i}: TODO")
        return call, {"type": "custom_tool_call_output", "call_id": cid, "output": output}

    def function(self) -> tuple[Item, Item]:
        cid = self._id("call")
        arguments = json.dumps({"path": f"src/{self.rng.choice(WORDS)}.py"})
        call = {
            "type": "function_call",
            "id": self._id("fc"),
            "call_id": cid,
            "name": "read_file",
            "arguments": arguments,
        }
        output = self._lines(self.rng.randint(5, 300), "{w}_{i} = compute({i})")
        return call, {"type": "function_call_output", "call_id": cid, "output": output}

    def local_shell(self) -> tuple[Item, Item]:
        cid = self._id("call")
        script = f"grep -rn {self.rng.choice(WORDS)} src/"
        action = {"type": "exec", "command": ["bash", "-lc", script], "env": {}}
        call = {
            "type": "local_shell_call",
            "id": self._id("lsh"),
            "call_id": cid,
            "status": "completed",
            "action": action,
        }
        output = self._lines(self.rng.randint(1, 400), "src/{w}.py:{i}: {w}")
        # The output names its call by "id", as the SDK types it.
        return call, {"type": "local_shell_call_output", "id": cid, "output": output}

    def computer(self) -> tuple[Item, Item]:
        cid = self._id("call")
        action = {"type": "click", "button": "left", "x": self.rng.randint(0, 1023), "y": 40}
        call = {
            "type": "computer_call",
            "id": self._id("cu"),
            "call_id": cid,
            "status": "completed",
            "pending_safety_checks": [],
            "action": action,
        }
        shot = {"type": "computer_screenshot", "image_url": f"https://shots.example/{cid}.png"}
        return call, {"type": "computer_call_output", "call_id": cid, "output": shot}

    def server(self) -> Item:
        if self.rng.random() < 0.5:
            action = {"type": "search", "query": f"python {self.rng.choice(WORDS)} error"}
            return {
                "type": "web_search_call",
                "id": self._id("ws"),
                "status": "completed",
                "action": action,
            }
        output = self._lines(self.rng.randint(1, 100), "doc line {i}: {w}")
        return {
            "type": "mcp_call",
            "id": self._id("mcp"),
            "server_label": "docs",
            "name": "lookup",
            "arguments": "{}",
            "output": output,
        }

    def reasoning(self) -> Item:
        item: Item = {"type": "reasoning", "id": self._id("rs"), "summary": []}
        if self.rng.random() < 0.5:
            item["summary"] = [
                {"type": "summary_text", "text": f"Check the {self.rng.choice(WORDS)}."}
            ]
        if self.rng.random() < 0.5:
            item["encrypted_content"] = "gAAAAA" + "x1Y_" * self.rng.randint(20, 400)
        return item

    def message(self, text: str, phase: str) -> Item:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        return {
            "type": "message",
            "id": self._id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": content,
            "phase": phase,
        }

    def steps(self) -> Iterator[tuple[list[Item], list[Item]]]:
        rng = self.rng
        yield (
            [{"role": "user", "content": "Fix the failing ledger tests; keep the API. TASK 7f3a."}],
            [],
        )
        makers: list[Callable[[], tuple[Item, Item]]] = [
            self.shell,
            self.patch,
            self.custom,
            self.function,
            self.local_shell,
            self.computer,
        ]
        for step in range(self.count):
            turn = [self.reasoning()]
            if rng.random() < 0.3:
                turn.append(self.message(f"Checking step {step}.", "commentary"))
            if rng.random() < 0.1:
                turn += [self.server(), self.reasoning()]
            calls = [
                rng.choices(makers, [5, 3, 1, 2, 1, 1])[0]()
                for _ in range(rng.choice([1, 1, 2, 3]))
            ]
            if self.write_lines and step == self.count // 2:
                calls.append(self.patch(self.write_lines))
            yield turn + [call for call, _ in calls], [output for _, output in calls]
            if rng.random() < 0.1:
                yield [self.reasoning(), self.message(f"Part {step} done.", "final_answer")], []
                yield [{"role": "user", "content": f"Instruction {step}: leave docs/ alone."}], []
        yield [self.reasoning(), self.message("All tests pass.", "final_answer")], []
