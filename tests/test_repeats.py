"""Repeated tool-output lines sent once per request (Session(dedupe_outputs=True), the default)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import ConfigError, Message
from ctxpack.managed import WindowPolicy
from ctxpack.session._repeats import MIN_RUN_CHARS, RepeatedLines
from ctxpack.store import open_store
from ctxpack.tokens import get_counter

from .threads import run_threads, switching_often

COUNTER = get_counter("gpt-4")


def view(lines: range, changed: dict[int, str] | None = None) -> str:
    """A numbered file view, as SWE-agent's ``open`` prints one."""
    changed = changed or {}
    return "\n".join(
        f"{i}: {changed.get(i, f'value_{i} = compute(value_{i - 1}, step={i})')}" for i in lines
    )


def call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "bash", "arguments": arguments},
            }
        ],
    }


def exchange(call_id: str, command: str, output: str) -> list[dict[str, Any]]:
    return [call(call_id, command), {"role": "tool", "tool_call_id": call_id, "content": output}]


def history(*outputs: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the overflow in calc.py"}]
    for n, output in enumerate(outputs, 1):
        messages += exchange(f"call_{n}", f"step {n}", output)
    return messages


def test_a_view_read_again_sends_only_its_changed_lines() -> None:
    session = ctxpack.Session(model="gpt-4", filters=False)
    session.extend(history(view(range(1, 41)), view(range(1, 41), {20: "value_20 = 0  # fixed"})))
    result = session.render()
    last = result.messages[-1]
    assert last.text.split("\n") == [
        "[… 19 lines as in the output of call_1 above]",
        "20: value_20 = 0  # fixed",
        "[… 20 lines as in the output of call_1 above]",
    ]
    # The first view is sent whole: the request holds every line once.
    assert result.messages[2].text == view(range(1, 41))
    (decision,) = [d for d in result.decisions if d.action == "deduped"]
    assert decision.message_id == last.id
    assert decision.tokens_after == COUNTER.count_message(last)
    assert decision.tokens_before is not None and decision.tokens_before > 4 * decision.tokens_after
    # Nothing is lost: the message as the record holds it is the result's original.
    assert result.original(last.id).text == view(range(1, 41), {20: "value_20 = 0  # fixed"})
    # Every message still gets a decision, and only one "kept" or "deduped" from the session.
    assert {d.message_id for d in result.decisions} >= {m.id for m in result.messages}


def test_default_filters_and_a_file_printed_twice() -> None:
    text = view(range(1, 61))
    session = ctxpack.Session(model="gpt-4")
    session.extend(
        [
            {"role": "user", "content": "Fix the overflow in calc.py"},
            *exchange("c1", "cat -n calc.py", text),
            *exchange("c2", "cat -n calc.py", text),
        ]
    )
    result = session.render()
    assert result.messages[2].text.startswith("1: value_1")
    assert "lines as in the output of c1 above]" in result.messages[-1].text
    plain = ctxpack.Session(model="gpt-4", dedupe_outputs=False)
    plain.extend(session.transcript())
    assert plain.render().messages[-1].text.startswith("1: value_1")
    assert result.tokens < plain.render().tokens


def test_short_runs_are_sent_as_they_are() -> None:
    lines = [f"ok {i}" for i in range(8)]  # repeated, but under MIN_RUN_CHARS
    assert sum(map(len, lines)) < MIN_RUN_CHARS
    session = ctxpack.Session(model="gpt-4", filters=False)
    session.extend(history("\n".join(lines), "\n".join(lines)))
    result = session.render()
    assert result.messages[-1].text == "\n".join(lines)
    assert not [d for d in result.decisions if d.action == "deduped"]


def test_off_sends_the_compact_record_as_it_is() -> None:
    session = ctxpack.Session(model="gpt-4", filters=False, dedupe_outputs=False)
    session.extend(history(view(range(1, 41)), view(range(1, 41))))
    assert [m.text for m in session.render().messages] == [m.text for m in session.compact()]


def test_a_bad_flag_is_named() -> None:
    with pytest.raises(ConfigError, match="dedupe_outputs"):
        ctxpack.Session(model="gpt-4", dedupe_outputs="yes")  # type: ignore[arg-type]


def test_packed_requests_are_not_deduplicated() -> None:
    # pack() may drop the earlier copy: a budgeted render sends the lines as the record has them.
    session = ctxpack.Session(model="gpt-4", filters=False)
    session.extend(history(view(range(1, 41)), view(range(1, 41))))
    result = session.render(budget=100_000)
    assert result.messages[-1].text == view(range(1, 41))


def test_an_opened_session_takes_the_option() -> None:
    store = open_store("memory://")
    on = ctxpack.Session.open("s", store=store, model="gpt-4", filters=False)
    on.extend(history(view(range(1, 41)), view(range(1, 41))))
    off = ctxpack.Session.open("s", store=store, model="gpt-4", filters=False, dedupe_outputs=False)
    assert off.render().messages[-1].text == view(range(1, 41))
    assert on.render().messages[-1].text.startswith("[… 40 lines")


def tool(call_id: str, text: str) -> Message:
    return Message(role="tool", tool_call_id=call_id, content=text, id=f"m-{call_id}")


def test_without_the_earlier_copy_the_lines_are_sent_again() -> None:
    repeats = RepeatedLines()
    first, again = tool("a", view(range(1, 41))), tool("b", view(range(1, 41)))
    sent, decisions, originals = repeats.apply([first, again], COUNTER)
    assert sent[1].text.startswith("[… 40 lines as in the output of a above]")
    assert [d.message_id for d in decisions] == ["m-b"] and originals == {"m-b": again}
    # The earlier output cleared (another text in its place), or gone from the request.
    cleared = first.model_copy(update={"content": "[cleared]"})
    assert repeats.apply([cleared, again], COUNTER)[0][1] is again
    assert repeats.apply([again], COUNTER)[0][0] is again
    # And back: the same request gives the same result again.
    assert repeats.apply([first, again], COUNTER)[0][1].text == sent[1].text


def test_an_unchanged_prefix_is_not_recomputed() -> None:
    repeats = RepeatedLines()
    first, again = tool("a", view(range(1, 41))), tool("b", view(range(1, 41)))
    sent = repeats.apply([first, again], COUNTER)[0]
    more = repeats.apply([first, again, tool("c", "done")], COUNTER)[0]
    # The very objects of the last request: counts and hashes stay cached.
    assert more[1] is sent[1]


def test_content_parts_are_left_alone() -> None:
    parts = [{"type": "text", "text": view(range(1, 41))}]
    first = tool("a", view(range(1, 41)))
    listed = Message(role="tool", tool_call_id="b", content=parts, id="m-b")
    sent, decisions, _ = RepeatedLines().apply([first, listed], COUNTER)
    assert sent[1] is listed and not decisions


# Outputs drawn from few lines, so that runs repeat across them.
LINES = [f"{i:03d}: value_{i} = compute(value_{i - 1}, step={i}, name='x{i}')" for i in range(24)]
outputs = st.lists(
    st.lists(st.sampled_from(LINES), min_size=1, max_size=30).map("\n".join)
    | st.integers(0, 20).map(lambda start: "\n".join(LINES[start : start + 12])),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(outputs, st.data())
def test_every_line_stays_in_the_request_and_the_prefix_holds(
    texts: list[str], data: st.DataObject
) -> None:
    session = ctxpack.Session(model="gpt-4", filters=False)
    cut = data.draw(st.integers(1, len(texts)))
    session.extend(history(*texts[:cut]))
    before = session.render().messages
    session.extend(history(*texts)[1 + 2 * cut :])
    result = session.render()
    # Appending more changes nothing already sent: a prompt cache keeps its prefix.
    assert [m.model_dump() for m in result.messages[: len(before)]] == [
        m.model_dump() for m in before
    ]
    for sent, record in zip(result.messages, session.compact(), strict=True):
        assert sent.role == record.role and sent.id == record.id
        assert sent.role == "tool" or sent.text == record.text
    lines_in_request(result.messages, session.compact())
    # The same history renders the same request in a new session (the cache changes nothing).
    fresh = ctxpack.Session(model="gpt-4", filters=False)
    fresh.extend(session.transcript())
    assert [m.text for m in fresh.render().messages] == [m.text for m in result.messages]


def test_a_server_side_policy_sends_repeats_as_they_are() -> None:
    # The provider clears old tool results itself: the copy a note points to could be gone.
    policy = WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(counter=COUNTER, filters=False, window=policy)
    session.extend(history(view(range(1, 41)), view(range(1, 41))))
    assert session.render().messages[-1].text == view(range(1, 41))


def test_a_managed_request_sends_again_what_it_cleared() -> None:
    # A small window: the managed mode clears or compacts the first views; a later view that
    # repeated them must then carry its own lines.
    texts = [view(range(1 + 40 * (n % 5), 41 + 40 * (n % 5))) for n in range(30)]
    session = ctxpack.Session(model="gpt-4", filters=False, window=WindowPolicy(window=8_000))
    deduped = 0
    for step in history(*texts):
        session.append(step)
        if step["role"] != "tool":
            continue
        result = session.render()
        deduped += sum(d.action == "deduped" for d in result.decisions)
        assert result.tokens <= 8_000 - WindowPolicy(window=8_000).reserve
        sent_lines: set[str] = set()
        for message in result.messages:
            if message.role == "tool":
                sent_lines |= set(message.text.split("\n"))
        # The newest output, whatever was cleared before it, is in the request line for line.
        assert set(step["content"].split("\n")) <= sent_lines
    assert deduped  # the repeats were sent once while their first copy was in the request


def test_an_output_left_out_of_the_request_is_no_copy() -> None:
    # A result whose call the session never saw is dropped from the request (provider rules):
    # a later output repeating it must carry its own lines.
    session = ctxpack.Session(model="gpt-4", filters=False)
    session.append({"role": "user", "content": "Go on."})
    session.append({"role": "tool", "tool_call_id": "orphan", "content": view(range(1, 41))})
    session.extend(exchange("call_2", "open calc.py", view(range(1, 41))))
    result = session.render()
    assert "orphan" not in {m.tool_call_id for m in result.messages}
    assert result.messages[-1].text == view(range(1, 41))


def lines_in_request(messages: list[Message], record: list[Message]) -> None:
    """Every line of every output is in the request: in its own message or an earlier one."""
    shown: set[str] = set()
    by_id = {m.id: m for m in record}
    for sent in messages:
        if sent.role != "tool":
            continue
        own = set(sent.text.split("\n"))
        assert set(by_id[sent.id].text.split("\n")) <= own | shown
        shown |= own


def test_threads_appending_and_rendering_one_session() -> None:
    # The cache of the last request is shared by every render of the session: renders racing
    # appends must each send every line, and the last render what a new session would send.
    session = ctxpack.Session(model="gpt-4", filters=False)
    session.append({"role": "user", "content": "Fix the overflow in calc.py"})

    def work(worker: int) -> None:
        for step in range(6):
            call_id = f"w{worker}-{step}"
            text = view(range(1 + 10 * (step % 3), 41 + 10 * (step % 3)))
            session.extend(exchange(call_id, f"open calc.py {step}", text))
            result = session.render()
            lines_in_request(result.messages, session.compact())

    with switching_often():
        run_threads(work, 8)
    fresh = ctxpack.Session(model="gpt-4", filters=False)
    fresh.extend(session.transcript())
    assert [m.text for m in session.render().messages] == [m.text for m in fresh.render().messages]
    assert any(d.action == "deduped" for d in session.render().decisions)
