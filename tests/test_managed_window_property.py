"""The managed mode's promise, on random agent sessions at small windows: every request, counted
on its own with ``ctxpack.count_tokens``, fits the window with the reply room; the system
prompt, the task and the latest user message are in it verbatim; every message it leaves out
or shortens is retrievable. A render raises ``BudgetExceededError`` only when the system
prompt, the task, the latest user message and the pinned content (as a compaction re-injects
it) cannot fit with the tools and the reply room.

It did not hold at windows of a few thousand tokens: the notes standing for the last call and
its results, and the summary's header, which no edit shortened, left a request over the
window (which raised), and a long latest question passing ``instructions_share`` was
summarised before the model had answered it.
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import BudgetExceededError, Session
from ctxpack.managed import WindowPolicy

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODELS = ("gpt-4o", "claude-sonnet-4-5")
WORDS = [
    *("alpha", "beta", "gamma", "delta", "config", "auth.py", "refresh", "token", "42", "2025"),
    *("error", "Traceback", "module", "value", "cache", "tests/test_auth.py", "def", "return"),
    *("src/app/main.py", "KeyError:", "'exp'", "PASSED", "FAILED", "import", "x"),
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} as the agent's harness runs it.",
            "parameters": {
                "type": "object",
                "properties": {key: {"type": "string"} for key in keys},
                "required": list(keys),
            },
        },
    }
    for name, keys in (("bash", ("command",)), ("write_file", ("path", "text")))
]
# The header of the message re-injecting pinned content after a compaction: part of what every
# request then carries.
PINNED_HEADER = "[ctxpack: pinned content, re-injected after a compaction]\n\n"


def summarise_short(messages: Any, instructions: Any) -> str:
    return "The agent read the logs and ran the tests."


def summarise_long(messages: Any, instructions: Any) -> str:
    return "\n".join(f"step {i}: the agent ran tests/test_{i}.py" for i in range(400))


def summarise_failing(messages: Any, instructions: Any) -> str:
    raise RuntimeError("the summary model is down")


SUMMARIZERS = (None, summarise_short, summarise_long, summarise_failing)


@dataclass
class Script:
    """One random agent session: its window, model and events, texts drawn from ``seed``."""

    window: int
    model: str
    summarizer: int
    filters: bool
    tools: bool
    seed: int
    system: int
    task: int
    memory: int
    events: list[tuple[Any, ...]] = field(default_factory=list)


def _step() -> st.SearchStrategy[tuple[Any, ...]]:
    # A call: bash or write_file, its output's lines (a few, or a log), the file's lines.
    call = st.tuples(st.booleans(), st.integers(0, 1000), st.integers(0, 1000))
    return st.tuples(st.just("step"), st.integers(0, 1000), st.lists(call, min_size=1, max_size=8))


EVENTS = st.one_of(
    _step(),
    _step(),
    _step(),
    st.tuples(st.just("user"), st.integers(0, 1000)),
    st.tuples(st.just("pin"), st.sampled_from(["skill", "memory"]), st.integers(0, 1000)),
)


@st.composite
def scripts(draw: st.DrawFn) -> Script:
    return Script(
        # Most at a few thousand tokens, where the notes and headers no edit shortens count.
        window=draw(st.one_of(st.integers(1_024, 4_000), st.integers(1_024, 16_000))),
        model=draw(st.sampled_from(MODELS)),
        summarizer=draw(st.integers(0, len(SUMMARIZERS) - 1)),
        filters=draw(st.booleans()),
        tools=draw(st.booleans()),
        seed=draw(st.integers(0, 2**32)),
        system=draw(st.integers(0, 1000)),
        task=draw(st.integers(0, 1000)),
        memory=draw(st.integers(-300, 1000)),
        events=draw(st.lists(EVENTS, min_size=1, max_size=30)),
    )


class Texts:
    """Texts sized by a share (0-1000 per mille) of ``scale`` words, from a seeded generator."""

    def __init__(self, seed: int, window: int) -> None:
        self.rng = random.Random(seed)
        self.scale = window // 5  # about a third of the window's tokens at 1000

    def words(self, share: int, least: int = 1) -> str:
        n = max(least, share * self.scale // 1000)
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def lines(self, share: int, tag: str) -> str:
        n = max(1, share * self.scale // 6000)
        return "\n".join(f"{tag} line {j}: {self.words(0, least=5)}" for j in range(n))


def turns(script: Script) -> Iterator[list[dict[str, Any]] | tuple[str, str, str] | None]:
    """The session's input, in order: a batch of messages to extend it with, a pin
    ``(text, name, kind)``, or ``None`` where the agent sends a request."""
    texts = Texts(script.seed, script.window)
    yield [
        {"role": "system", "content": texts.words(script.system // 3)},
        {"role": "user", "content": texts.words(script.task // 3)},
    ]
    if script.memory > 0:
        yield (texts.words(script.memory // 4), "AGENTS.md", "memory")
    yield None
    calls = 0
    for n, event in enumerate(script.events):
        if event[0] == "user":
            yield [{"role": "user", "content": texts.words(event[1])}]
            yield None
        elif event[0] == "pin":
            yield (texts.words(event[2] // 4), f"skill-{n}", event[1])
        else:
            batch, results = [], []
            for is_write, output, written in event[2]:
                calls += 1
                cid = f"call_{calls}"
                if is_write:
                    args = {"path": f"src/m{calls}.py", "text": texts.lines(written, "w")}
                else:
                    args = {"command": f"pytest -q tests/test_{calls}.py"}
                name = "write_file" if is_write else "bash"
                function = {"name": name, "arguments": json.dumps(args)}
                batch.append({"id": cid, "type": "function", "function": function})
                # Most outputs are short; a share above 700 is a log of many lines.
                size = output if output > 700 else output // 50
                results.append(
                    {"role": "tool", "tool_call_id": cid, "content": texts.lines(size, cid)}
                )
            thought = {"role": "assistant", "content": texts.words(event[1] // 3)}
            yield [{**thought, "tool_calls": batch}, *results]
            yield None


def floor_tokens(model: str, texts: list[str], pins: list[str], tools: list[dict[str, Any]]) -> int:
    """What every request must carry, counted on its own: the system prompt, the task and the
    latest user message, the pinned content as a compaction re-injects it, the tools."""
    messages = [{"role": "system", "content": texts[0]}]
    messages += [{"role": "user", "content": text} for text in dict.fromkeys(texts[1:])]
    if pins:
        messages.append({"role": "user", "content": PINNED_HEADER + "\n\n".join(pins)})
    return counted(messages, model, tools)


def counted(messages: list[dict[str, Any]], model: str, tools: list[dict[str, Any]]) -> int:
    """``ctxpack.count_tokens`` of a request to ``model``, its approximation for Claude
    unannounced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        return ctxpack.count_tokens(messages, model=model, tools=tools)


def check_session(script: Script) -> int:
    """Run ``script``, checking every request; the number of requests sent."""
    policy = WindowPolicy(window=script.window, summarizer=SUMMARIZERS[script.summarizer])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxpack.tokens.ApproximateTokenCountWarning)
        session = Session(
            model=script.model, window=policy, filters=None if script.filters else False
        )
    provider: Literal["openai", "anthropic"] = (
        "anthropic" if script.model.startswith("claude") else "openai"
    )
    given = TOOLS if script.tools else None
    sent_tools = [*(given or []), *session.tools(provider)]
    system = task = latest = ""
    pins: list[str] = []
    sent = 0
    for turn in turns(script):
        if isinstance(turn, list):
            session.extend(turn)
            for message in turn:
                if message["role"] == "system":
                    system = message["content"]
                elif message["role"] == "user":
                    task = task or message["content"]
                    latest = message["content"]
            continue
        if isinstance(turn, tuple):
            session.pin(turn[0], name=turn[1], kind=turn[2])  # type: ignore[arg-type]
            pins.append(turn[0])
            continue
        try:
            result = session.render(tools=given)
        except BudgetExceededError as error:
            floor = floor_tokens(script.model, [system, task, latest], pins, sent_tools)
            assert floor + policy.reserve > script.window, str(error)
            assert "raise window" in str(error)
            return sent
        sent += 1
        tokens = counted(result.to_openai(), script.model, sent_tools)
        assert tokens + policy.reserve <= script.window, (tokens, policy.reserve)
        texts = [m.text for m in result.messages]
        assert result.messages[0].role == "system" and texts[0] == system
        assert task in texts and latest in texts
        carried = {m.id: m.content for m in result.messages}
        for whole in session.transcript():
            if carried.get(whole.id) != whole.content:
                original = result.original(whole.id)
                assert original is not None, whole.id
                assert original.content == whole.content, whole.id
    return sent


@SETTINGS
@given(scripts())
def test_every_request_fits_its_window_or_the_floor_cannot(script: Script) -> None:
    check_session(script)


@pytest.mark.parametrize("seed", range(12))
def test_seeded_sessions_fit_their_windows(seed: int) -> None:
    # Longer sessions than the property draws: many compactions and emergencies each.
    rng = random.Random(seed)
    events: list[tuple[Any, ...]] = []
    for _ in range(rng.randint(20, 60)):
        if rng.random() < 0.12:
            events.append(("user", rng.choice([0, 30, 300, 900])))
        elif rng.random() < 0.05:
            events.append(("pin", rng.choice(["skill", "memory"]), rng.randint(0, 400)))
        else:
            calls = [
                (rng.random() < 0.15, rng.randint(0, 1000), rng.randint(0, 600))
                for _ in range(rng.choice([1, 1, 1, 2, 3, 8]))
            ]
            events.append(("step", rng.choice([0, 50, 600]), calls))
    script = Script(
        window=rng.randint(1_024, 4_000 if seed % 3 else 16_000),
        model=MODELS[seed % 2],
        summarizer=rng.randint(0, len(SUMMARIZERS) - 1),
        filters=rng.random() < 0.5,
        tools=rng.random() < 0.7,
        seed=seed,
        system=rng.randint(0, 600),
        task=rng.randint(0, 600),
        memory=rng.randint(-300, 600),
        events=events,
    )
    assert check_session(script) > 0


# ------------------------------------------------------------------ the cases the property found

COUNTER = ctxpack.get_counter(counter="cl100k_base")
SYSTEM = {"role": "system", "content": "You are a coding agent."}
TASK = {"role": "user", "content": "Fix the build."}


def parallel_reads(first: int, count: int, lines: int = 40) -> list[dict[str, Any]]:
    """The agent reading ``count`` modules at once, and what each read returned."""
    calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"cat m{i}.py"})},
        }
        for i in range(first, first + count)
    ]
    outputs = [
        {
            "role": "tool",
            "tool_call_id": f"c{i}",
            "content": "\n".join(f"def f_{i}_{j}(x): return x * {j}" for j in range(lines)),
        }
        for i in range(first, first + count)
    ]
    return [{"role": "assistant", "content": "Reading the modules.", "tool_calls": calls}, *outputs]


def managed(window: int) -> Session:
    session = Session(counter=COUNTER, filters=False, window=window)
    session.extend([SYSTEM, TASK])
    return session


def sent_tokens(session: Session, result: ctxpack.PackResult) -> int:
    tools = [*TOOLS, *session.tools()]
    return ctxpack.count_tokens(result.to_openai(), tools=tools, counter=COUNTER)


def test_the_last_call_is_summarised_when_its_notes_alone_pass_the_window() -> None:
    session = managed(1_024)
    session.extend(parallel_reads(0, 12))
    result = session.render(tools=TOOLS)
    assert session.window is not None
    assert sent_tokens(session, result) + session.window.reserve <= 1_024
    assert [m.text for m in result.messages[:2]] == [SYSTEM["content"], TASK["content"]]
    # The calls and every output went into the summary, each original listed in its index.
    index = session.retrieve(session.window_state.index_artifact or "").text
    for message in session.transcript()[2:]:
        assert message.id in index
        assert result.original(message.id) is not None
    assert not any(m.role == "tool" for m in result.messages)


def question_leaving(session: Session, left: int) -> str:
    """A question after which ``left`` tokens remain in the request's room beside the
    instructions, the tools and the reply room."""
    assert session.window is not None
    tools = [*TOOLS, *session.tools()]
    for n in range(1, 2_000):
        text = "why " * n
        floor = ctxpack.count_tokens([SYSTEM, TASK, {"role": "user", "content": text}], tools=tools)
        if session.window.window - session.window.reserve - floor <= left:
            return text
    raise AssertionError("no question leaves so little room")


def test_the_summary_is_left_out_when_even_its_header_does_not_fit() -> None:
    session = managed(1_024)
    for first in (0, 2, 4):
        session.extend(parallel_reads(first, 2, lines=30))
        session.render(tools=TOOLS)
    assert session.window_state.summary_id is not None
    # Too little room for the summary's header, enough for what must be sent.
    session.append({"role": "user", "content": question_leaving(session, 12)})
    result = session.render(tools=TOOLS)
    assert session.window is not None
    assert sent_tokens(session, result) + session.window.reserve <= 1_024
    assert [m.role for m in result.messages] == ["system", "user", "user"]
    assert session.window_state.summary is None
    assert any(d.action == "dropped" for d in result.decisions)
    for message in session.transcript()[2:-1]:
        assert result.original(message.id) is not None
    # Once the question is answered and a short one follows, the next compaction summarises
    # it with the rest, and the summary is sent again.
    session.append({"role": "assistant", "content": "Because of the cache."})
    session.append({"role": "user", "content": "Go on."})
    session.extend(parallel_reads(10, 1, lines=5))
    later = session.render(tools=TOOLS)
    assert sent_tokens(session, later) + session.window.reserve <= 1_024
    assert session.window_state.summary is not None
    assert session.window_state.summary_id in [m.id for m in later.messages]


def test_a_long_latest_question_is_never_summarised_before_it_is_answered() -> None:
    session = managed(8_000)
    assert session.window is not None
    room = session.window.window - session.window.reserve
    question = "explain " * int(room * 0.6)
    session.append({"role": "user", "content": question})
    session.extend(parallel_reads(0, 1, lines=300))
    result = session.render(tools=TOOLS)
    assert question in [m.text for m in result.messages]
    assert sent_tokens(session, result) + session.window.reserve <= 8_000
