"""Messages above the size limit: a Session stores them whole and shows their head and tail;
pack() refuses them, naming the message, before doing any work on them."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxpack
from ctxpack.limits import MAX_MESSAGE_CHARS, OVERSIZED_VIEW_CHARS, message_chars

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "cat big.log"}'},
        }
    ],
}


def big_log() -> str:
    head = "FIRST LINE: the start of the log\n"
    tail = "LAST LINE: 3 errors in all\n"
    body = "2024-05-01 12:00:00 INFO worker processed an item\n"
    middle = body * ((MAX_MESSAGE_CHARS - len(head) - len(tail)) // len(body) + 2)
    return head + middle + tail


def test_message_chars_counts_text_parts_and_tool_call_arguments() -> None:
    parts = ctxpack.Message(role="user", content=[{"type": "text", "text": "abc"}])
    assert message_chars(parts) == 3
    call = ctxpack.messages.ensure_messages([CALL])[0]
    assert message_chars(call) == len('{"command": "cat big.log"}')


def test_a_session_stores_an_oversized_tool_output_whole_and_shows_its_ends() -> None:
    text = big_log()
    assert len(text) > MAX_MESSAGE_CHARS
    session = ctxpack.Session(model="gpt-4")
    session.extend([{"role": "user", "content": "What does the log say?"}, CALL])
    session.append({"role": "tool", "tool_call_id": "c1", "content": text})
    record = session.records[-1]
    assert record.kind == "oversized" and record.shortened and record.artifact
    assert record.tool == "bash" and "above the limit" in record.reason
    view = session.compact()[-1].text
    assert len(view) < OVERSIZED_VIEW_CHARS + 500
    assert view.startswith("FIRST LINE") and "\nLAST LINE: 3 errors in all\n[ctxpack: " in view
    assert record.artifact in view
    # Nothing is lost: the transcript and the store hold the original.
    assert session.transcript()[-1].text == text
    assert session.store.get(record.artifact) == text
    assert "LAST LINE" in session.retrieve(record.artifact, regex="LAST LINE").text
    result = session.render(budget=4000)
    assert result.tokens <= 4000 and result.messages[-1].text == view


def test_a_session_shortens_an_oversized_user_message_too() -> None:
    session = ctxpack.Session(model="gpt-4")
    session.append({"role": "user", "content": big_log()})
    assert session.records[-1].kind == "oversized"
    assert len(session.compact()[-1].text) < OVERSIZED_VIEW_CHARS + 500


def test_pack_refuses_an_oversized_message_naming_it() -> None:
    history: list[Any] = [
        {"role": "user", "content": "What does the log say?"},
        CALL,
        {"role": "tool", "tool_call_id": "c1", "content": big_log()},
    ]
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        ctxpack.pack(history, budget=4000, model="gpt-4")
    error = caught.value
    assert (error.index, error.field) == (2, "content")
    assert f"{MAX_MESSAGE_CHARS:,}" in str(error) and "Session" in str(error)


def test_a_huge_message_gets_an_id_from_its_whole_content() -> None:
    text = "x" * 3_000_000
    ids = [
        ctxpack.messages.ensure_messages([{"role": "user", "content": t}])[0].id
        for t in (text, "".join(["x" * 1_500_000, "x" * 1_500_000]), text[:-1] + "y")
    ]
    assert ids[0] == ids[1] != ids[2]


def oversized_session(**options: Any) -> tuple[ctxpack.Session, str]:
    text = big_log()
    session = ctxpack.Session(model="gpt-4", **options)
    session.extend([{"role": "user", "content": "What does the log say?"}, CALL])
    session.append({"role": "tool", "tool_call_id": "c1", "content": text})
    return session, text


def test_an_oversized_views_notes_are_in_ctxpacks_form_and_say_what_is_hidden() -> None:
    session, text = oversized_session()
    artifact = session.records[-1].artifact
    assert artifact is not None
    lines = text.split("\n")
    view = session.compact()[-1].text.split("\n")
    notes = [line for line in view if ctxpack.filters.is_note(line)]
    # Whole lines kept at each end, a gap note naming the hidden ones between, and the marker
    # every shortened output ends with, last (the retrieve tool's description says so).
    assert len(notes) == 2 and view[-1] == notes[1]
    gap = notes[0]
    first, last = map(int, gap.rsplit(": ", 1)[1].rstrip("]").split("-"))
    assert gap == f"[… {last - first + 1} lines hidden: {first}-{last}]"
    assert view[: view.index(gap)] == lines[: first - 1]
    assert view[view.index(gap) + 1 : -1] == lines[last:-1]  # the empty line after the last \n
    hidden = sum(len(line) + 1 for line in lines[first - 1 : last])
    assert notes[1] == (
        f"[ctxpack: oversized message shortened (above ctxpack's limit of {MAX_MESSAGE_CHARS:,} "
        f"characters; its head and tail kept, {hidden:,} of its {len(text):,} characters "
        f"hidden); original: {len(lines)} lines, artifact {artifact}; more with "
        f'retrieve_original(artifact="{artifact}", lines="A-B" or regex="...")]'
    )
    # The model reads the hidden lines back as the note numbers them.
    call = {"artifact": artifact, "lines": f"{first}-{first + 2}"}
    answer = session.handle(json.dumps(call))
    assert answer.split("\n")[1:] == lines[first - 1 : first + 2]


def test_an_oversized_views_marker_offers_no_tool_the_model_lacks() -> None:
    session, _ = oversized_session(retrieve_tool=False)
    marker = session.compact()[-1].text.rsplit("\n", 1)[1]
    assert marker.startswith("[ctxpack: oversized message shortened")
    assert session.records[-1].artifact in marker and "retrieve_original" not in marker


def test_an_oversized_line_is_shown_in_part_around_a_note_in_characters() -> None:
    text = "[" + ",".join(['{"id": 1}'] * (MAX_MESSAGE_CHARS // 10 + 1)) + "]"  # one line
    session = ctxpack.Session(model="gpt-4")
    session.append({"role": "user", "content": text})
    view = session.compact()[-1].text.split("\n")
    hidden = len(text) - OVERSIZED_VIEW_CHARS
    assert view[0] == text[: OVERSIZED_VIEW_CHARS // 2]
    assert view[1:3] == [f"[… {hidden} characters hidden: part of line 1]", text[-4_000:]]
    assert f"{hidden:,} of its {len(text):,} characters hidden" in view[3]
    assert session.store.get(session.records[-1].artifact or "") == text
