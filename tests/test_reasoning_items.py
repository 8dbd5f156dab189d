"""OpenAI reasoning items: read, counted, packed with what they led to, and sent back.

A reasoning model's ``response.output`` starts with a ``reasoning`` item; passed back before the
calls it led to, the model resumes its reasoning. The Responses API pairs the two by the id of
the item that follows, and refuses a reasoning item followed by nothing of its response.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import httpx2
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import Pipeline
from ctxpack.adapters import from_openai, to_openai, validate_anthropic, validate_openai
from ctxpack.editing import ToolResultClearer
from ctxpack.tokens import ApproximateTokenCountWarning
from tests.sdk_mock import WEATHER_TOOL, Capture, openai_client
from tests.test_clients_responses import response

openai_responses = pytest.importorskip("openai.types.responses")
ITEM = pydantic.TypeAdapter(openai_responses.ResponseInputItem)
FLAT_WEATHER_TOOL = {"type": "function", "strict": False, **WEATHER_TOOL["function"]}  # type: ignore[dict-item]
ENCRYPTED = "gAAAAABp" + "Zm9v" * 900  # the shape of a Fernet token, 3,608 characters


def reasoning(n: int, encrypted: str | None = ENCRYPTED) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": f"rs_{n}",
        "summary": [{"type": "summary_text", "text": f"Plan {n}: look it up."}],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def call(city: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{city}",
        "call_id": f"call_{city}",
        "name": "get_weather",
        "arguments": json.dumps({"city": city}),
        "status": "completed",
    }


def output(city: str, text: str = "3 C") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": f"call_{city}", "output": text}


def answer(n: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{n}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def check_pairing(items: list[dict[str, Any]]) -> None:
    """What the Responses API checks: a reasoning item is followed by an item of its response,
    which carries its id; an item that carries a response's id follows its reasoning."""
    for item in items:
        ITEM.validate_python(item)  # an input item the SDK's own model reads
    for k, item in enumerate(items):
        if item.get("type") == "reasoning":
            following = items[k + 1] if k + 1 < len(items) else {}
            assert following.get("type") in ("reasoning", "function_call", "message"), items
            assert following.get("type") == "reasoning" or "id" in following, items
        elif "id" in item:
            previous = items[k - 1]
            assert previous.get("type") == "reasoning" or "id" in previous, items


# ------------------------------------------------------------------------------------- reading


def test_a_reasoning_item_becomes_a_part_of_the_message_it_led_to() -> None:
    rs = openai_responses.ResponseReasoningItem.model_validate(reasoning(1))
    calls = [openai_responses.ResponseFunctionToolCall.model_validate(call(c)) for c in "AB"]
    msgs = from_openai([{"role": "user", "content": "A and B?"}, rs, *calls])
    assert [m.role for m in msgs] == ["user", "assistant"]
    assistant = msgs[1]
    assert assistant.content == [reasoning(1)]
    assert [c.id for c in assistant.tool_calls or ()] == ["call_A", "call_B"]
    # The items themselves are kept, in their order.
    assert [i["id"] for i in assistant.metadata["openai_responses"]] == ["rs_1", "fc_A", "fc_B"]


def test_chat_completions_and_anthropic_leave_reasoning_out() -> None:
    msgs = from_openai(
        [
            {"role": "user", "content": "A?"},
            reasoning(1),
            call("A"),
            output("A"),
            reasoning(2),
            answer(2, "3 C in A."),
        ]
    )
    chat = to_openai(msgs)
    validate_openai(chat)
    assert chat[1]["content"] is None and chat[1]["tool_calls"][0]["id"] == "call_A"
    assert chat[3]["content"] == [{"type": "text", "text": "3 C in A."}]
    assert "reasoning" not in json.dumps(chat)
    payload = ctxpack.to_anthropic(msgs)
    validate_anthropic(payload)
    assert "reasoning" not in json.dumps(payload)


@pytest.mark.parametrize(
    ("item", "field", "message"),
    [
        ({"type": "reasoning", "id": "rs_1"}, "summary", "summary must be a list"),
        ({"type": "reasoning", "id": "", "summary": []}, "id", "non-empty string"),
        (
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": 5},
            "encrypted_content",
            "string or null",
        ),
    ],
)
def test_a_malformed_reasoning_item_is_refused_naming_its_field(
    item: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ctxpack.InvalidMessageError, match=message) as err:
        from_openai([{"role": "user", "content": "hi"}, item])
    assert (err.value.index, err.value.field) == (1, field)


def test_a_reasoning_part_outside_an_assistant_message_is_refused() -> None:
    with pytest.raises(ctxpack.InvalidMessageError, match="assistant") as err:
        from_openai([{"role": "user", "content": [reasoning(1)]}])
    assert (err.value.index, err.value.field) == (0, "content[0]")
    with pytest.raises(ctxpack.InvalidMessageError) as err:
        from_openai([{"role": "assistant", "content": [{**reasoning(1), "summary": "x"}]}])
    assert err.value.field == "content[0].summary"


# ------------------------------------------------------------------------------------ counting


def test_encrypted_reasoning_counts_as_codex_estimates_it_with_a_warning() -> None:
    counter = ctxpack.tokens.get_counter("gpt-4o")
    bare = from_openai([call("A")])[0]
    with pytest.warns(ApproximateTokenCountWarning, match="encrypted_content"):
        with_thoughts = from_openai([reasoning(1), call("A")])[0]
        extra = counter.count_message(with_thoughts) - counter.count_message(bare)
    # Base64 decodes to 3/4 of its length, less a 650-byte envelope, at 4 bytes a token.
    assert extra == math.ceil((len(ENCRYPTED) * 3 // 4 - 650) / 4)


def test_raw_reasoning_text_counts_exactly_without_a_warning() -> None:
    counter = ctxpack.tokens.get_counter("gpt-4o")
    thoughts = "First read the file, then compare the two dates. " * 20
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": thoughts}],
    }
    bare = from_openai([call("A")])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        message = from_openai([item, call("A")])[0]
        extra = counter.count_message(message) - counter.count_message(bare)
    assert extra == counter.count(thoughts)


def test_reasoning_by_id_alone_counts_its_summary_and_warns() -> None:
    counter = ctxpack.tokens.get_counter("gpt-4o")
    bare = from_openai([call("A")])[0]
    with pytest.warns(ApproximateTokenCountWarning, match="summary"):
        message = from_openai([reasoning(1, encrypted=None), call("A")])[0]
        extra = counter.count_message(message) - counter.count_message(bare)
    assert extra == counter.count("Plan 1: look it up.")


# ------------------------------------------------------------------------------------- writing


def test_reasoning_goes_back_before_its_calls_with_their_ids() -> None:
    history = [
        {"role": "user", "content": "A and B?"},
        reasoning(1),
        call("A"),
        call("B"),
        output("A"),
        output("B", "20 C"),
        reasoning(2),
        answer(2, "3 C and 20 C."),
        {"role": "user", "content": "Thanks"},
    ]
    sent = to_openai(from_openai(history), api="responses")
    check_pairing(sent)
    strip = {"status"}
    expected = [
        history[0],
        reasoning(1),
        *({k: v for k, v in call(c).items() if k not in strip} for c in "AB"),
        output("A"),
        output("B", "20 C"),
        reasoning(2),
        answer(2, "3 C and 20 C."),
        history[-1],
    ]
    assert sent == expected


def test_reasoning_appended_item_by_item_still_goes_back_paired() -> None:
    items = [{"role": "user", "content": "A?"}, reasoning(1), call("A"), output("A")]
    session = ctxpack.Session(counter="o200k_base")
    for item in items:
        session.append(item)
    sent = session.render().to_openai(api="responses")
    check_pairing(sent)
    assert [i.get("type") for i in sent] == [None, "reasoning", "function_call", sent[-1]["type"]]
    assert sent[2]["id"] == "fc_A"


def test_reasoning_whose_items_are_gone_is_not_sent() -> None:
    # A reply cut short while reasoning (max_output_tokens): nothing follows it.
    alone = from_openai([{"role": "user", "content": "A?"}, reasoning(1)])
    assert to_openai(alone, api="responses") == [{"role": "user", "content": "A?"}]
    # Reasoning whose following items' ids are unknown (written by hand): the calls go
    # without it, as a chat history's do.
    by_hand = [
        {"role": "user", "content": "A?"},
        {
            "role": "assistant",
            "content": [reasoning(1)],
            "tool_calls": [
                {"id": "call_A", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_A", "content": "3 C"},
    ]
    sent = to_openai(by_hand, api="responses")
    check_pairing(sent)
    assert [i.get("type") for i in sent] == [None, "function_call", "function_call_output"]


def unsent_reasoning_histories() -> list[list[dict[str, Any]]]:
    """Reasoning no request sends: a reply cut short while reasoning, at the end and before
    the user's next question; and one followed by an answer written without its ids."""
    return [
        [{"role": "user", "content": "A?"}, reasoning(1)],
        [{"role": "user", "content": "A?"}, reasoning(1), {"role": "user", "content": "Well?"}],
        [
            {"role": "user", "content": "A?"},
            reasoning(1),
            {"role": "assistant", "content": "3 C"},
            {"role": "user", "content": "Thanks"},
        ],
    ]


@pytest.mark.parametrize("history", unsent_reasoning_histories())
def test_packed_reasoning_no_request_sends_is_dropped_and_not_counted(
    history: list[dict[str, Any]],
) -> None:
    # The writers leave it out (the Responses API refuses reasoning followed by nothing of its
    # response; the other APIs have no place for it): the result says so, and counts what goes.
    messages = from_openai(history)
    alone = next(m for m in messages if m.content == [reasoning(1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        result = ctxpack.pack(messages, budget=100_000, model="gpt-4o")
    sent = [m for m in messages if m is not alone]
    assert result.to_openai(api="responses") == to_openai(sent, api="responses")
    assert result.kept_ids == [m.id for m in sent] and result.dropped_ids == [alone.id]
    assert result.tokens == ctxpack.count_tokens(sent, model="gpt-4o")
    last = result.decisions_for(alone.id)[-1]
    assert (last.stage, last.action, last.tokens_after) == ("writer", "dropped", 0)
    assert "reasoning" in last.reason and result.original(alone.id) is None
    assert f"{alone.id} dropped" in result.report()


@pytest.mark.parametrize("managed", [False, True])
def test_a_session_counts_reasoning_appended_alone_only_once_sent(managed: bool) -> None:
    session = ctxpack.Session(counter="o200k_base", window=100_000 if managed else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        session.append({"role": "user", "content": "A?"})
        session.append(reasoning(1))
        waiting = session.render()
        assert waiting.to_openai(api="responses") == [{"role": "user", "content": "A?"}]
        shown = ctxpack.count_tokens(waiting.messages, counter="o200k_base")
        assert waiting.tokens == shown + waiting.tool_tokens
        assert len(waiting.messages) == 1 and len(waiting.dropped_ids) == 1
        decision = waiting.decisions_for(waiting.dropped_ids[0])[-1]
        assert (decision.stage, decision.action) == ("writer", "dropped")
        # Its call arrives: the reasoning goes before it, paired, and counts.
        session.append(call("A"))
        session.append(output("A"))
        sent = session.render().to_openai(api="responses")
    check_pairing(sent)
    assert [i.get("type") for i in sent][:3] == [None, "reasoning", "function_call"]


def test_cleared_reasoning_leaves_its_calls_without_ids() -> None:
    history = [{"role": "user", "content": "Weather in A, B and C?"}]
    for n, city in enumerate("ABC"):
        history += [reasoning(n), call(city), output(city)]
    messages = from_openai(history)
    stage = ToolResultClearer(trigger=0, keep=9, clear_thinking=1, cache_aware=False)
    result = ctxpack.pack(messages, budget=100_000, pipeline=Pipeline([stage]))
    sent = result.to_openai(api="responses")
    check_pairing(sent)
    assert [i["id"] for i in sent if i.get("type") == "reasoning"] == ["rs_2"]
    assert [i.get("id") for i in sent if i.get("type") == "function_call"] == [None, None, "fc_C"]


history_items = st.lists(
    st.tuples(
        st.sampled_from(["calls", "answer", "cut"]),
        st.integers(1, 3),
        st.integers(5, 400),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(turns=history_items, budget=st.integers(200, 6000))
def test_packed_histories_send_reasoning_only_with_its_items(
    turns: list[tuple[str, int, int]], budget: int
) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for n, (kind, calls, size) in enumerate(turns):
        history.append({"role": "user", "content": f"Question {n}. " + "word " * size})
        history.append(reasoning(n, ENCRYPTED[: 700 + 10 * size]))
        if kind == "calls":
            cities = [f"{n}x{k}" for k in range(calls)]
            history += [call(c) for c in cities]
            history += [output(c, "sunny " * size) for c in cities]
        elif kind == "answer":
            history.append(answer(n, "It is sunny. " * (size // 10 + 1)))
    messages = from_openai(history)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        try:
            result = ctxpack.pack(messages, budget=budget, model="gpt-4o")
        except ctxpack.BudgetExceededError:
            return
    assert result.tokens <= budget
    sent = result.to_openai(api="responses")
    check_pairing(sent)
    # Every reasoning item sent is one the history held, verbatim.
    given_reasoning = [i for i in history if i.get("type") == "reasoning"]
    assert all(i in given_reasoning for i in sent if i.get("type") == "reasoning")
    # A message of reasoning alone that is kept is sent (its tokens in result.tokens are);
    # one no request sends is dropped, so decided.
    for message in result.messages:
        if message.role == "assistant" and not message.tool_calls and not message.text:
            assert all(part in sent for part in message.content or ()), message.id
    for mid in result.dropped_ids:
        assert {d.action for d in result.decisions_for(mid)} & {"dropped", "deduped"}, mid


# --------------------------------------------------------------------------- the client wrapper


def test_a_wrapped_client_sends_a_reasoning_models_output_back_paired() -> None:
    replies = iter(
        [response(reasoning(1), call("Oslo"), call("Rome")), response(answer(2, "Cold."))]
    )
    capture = Capture(lambda body: httpx2.Response(200, json=next(replies)))
    client = ctxpack.wrap_openai(openai_client(capture), window=20_000)
    history: list[Any] = [{"role": "user", "content": "Oslo and Rome?"}]
    options: dict[str, Any] = {
        "model": "o4-mini",
        "tools": [FLAT_WEATHER_TOOL],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        first = client.responses.create(input=history, **options)
        history += first.output  # the SDK's own items, the reasoning first
        history += [output("Oslo"), output("Rome", "20 C")]
        client.responses.create(input=history, **options)
    sent = capture.body["input"]
    check_pairing(sent)
    assert sent[1] == reasoning(1)
    assert [i.get("id") for i in sent[2:4]] == ["fc_Oslo", "fc_Rome"]
    assert capture.body["include"] == ["reasoning.encrypted_content"]
    result = client.last_result
    assert result is not None and result.tokens > math.ceil((len(ENCRYPTED) * 3 // 4 - 650) / 4)


def test_a_wrapped_client_counts_only_the_reasoning_it_sends() -> None:
    # A reply cut short while reasoning (max_output_tokens), passed back with the question
    # asked again: the reasoning goes nowhere, and the result neither counts nor keeps it.
    capture = Capture(lambda body: httpx2.Response(200, json=response(answer(2, "Cold."))))
    client = ctxpack.wrap_openai(openai_client(capture), window=20_000)
    question = {"role": "user", "content": "Oslo?"}
    history: list[Any] = [question, reasoning(1), {"role": "user", "content": "Well?"}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        client.responses.create(model="o4-mini", input=history, store=False)
    assert capture.body["input"] == [question, history[-1]]
    result = client.last_result
    assert result is not None and len(result.dropped_ids) == 1
    assert result.tokens == ctxpack.count_tokens(result.messages, model="o4-mini")
    assert [d.stage for d in result.decisions_for(result.dropped_ids[0])][-1] == "writer"


# ----------------------------------------------------------------------------------- LangChain


def test_a_langchain_reasoning_block_goes_back_to_langchain_and_out_of_chat() -> None:
    messages_module = pytest.importorskip("langchain_core.messages")
    block = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": ENCRYPTED}
    ai = messages_module.AIMessage(content=[block, {"type": "text", "text": "Cold."}])
    msgs = ctxpack.adapters.from_langchain([messages_module.HumanMessage("Oslo?"), ai])
    back = ctxpack.adapters.to_langchain(msgs)
    assert back[1].content == ai.content
    assert to_openai(msgs)[1]["content"] == [{"type": "text", "text": "Cold."}]


# ------------------------------------------------------------------------------------ sessions


def test_a_silent_calls_reasoning_summary_is_the_goal_its_output_is_filtered_for() -> None:
    functions = [
        f"def helper_{i}(x):\n    value = x * {i}\n    return value + {i}\n" for i in range(400)
    ]
    functions.insert(
        200,
        "def parse_date(text):\n    day, month, year = text.split('/')\n"
        "    return int(year), int(month), int(day)\n",
    )
    source = "\n".join(functions)

    def kept(summary: str) -> str:
        session = ctxpack.Session(counter="o200k_base")
        session.append({"role": "user", "content": "The report shows wrong numbers, fix it."})
        thought = {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": summary}],
        }
        command = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "c1",
            "name": "bash",
            "arguments": json.dumps({"command": "cat utils.py"}),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ApproximateTokenCountWarning)
            session.extend([thought, command])
            session.append({"type": "function_call_output", "call_id": "c1", "output": source})
            sent = session.render().messages
        return next(m.text for m in sent if m.role == "tool")

    body = "return int(year), int(month), int(day)"
    assert body in kept("Look at parse_date: the year and the day look swapped.")
    assert body not in kept("Check the file.")  # the user's question names no function either


def _kept_message_reasoning_histories() -> list[list[dict[str, Any]]]:
    """A kept message holding reasoning no request sends: reasoning with neither an id nor
    encrypted content (nothing the API could resolve), and reasoning whose calls were written
    by hand, without the ids the Responses API pairs it by."""
    no_id = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan: " * 300}]}
    by_hand_call = {
        "id": "call_A",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    return [
        [
            {"role": "user", "content": "A?"},
            {"role": "assistant", "content": [no_id, {"type": "text", "text": "3 C"}]},
            {"role": "user", "content": "Thanks"},
        ],
        [
            {"role": "user", "content": "A?"},
            {"role": "assistant", "content": [reasoning(1)], "tool_calls": [by_hand_call]},
            {"role": "tool", "tool_call_id": "call_A", "content": "3 C"},
        ],
    ]


@pytest.mark.parametrize("history", _kept_message_reasoning_histories())
def test_reasoning_no_request_sends_inside_a_kept_message_is_cleared_and_not_counted(
    history: list[dict[str, Any]],
) -> None:
    # It was counted (thousands of tokens for encrypted reasoning), yet no writer sent it.
    messages = from_openai(history)
    holder = messages[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        result = ctxpack.pack(messages, budget=100_000, model="gpt-4o")
        assert result.kept_ids == [m.id for m in messages]
        kept = result.messages[1]
        assert not any(p.get("type") == "reasoning" for p in kept.content or ())
        assert result.to_openai(api="responses") == to_openai(messages, api="responses")
        assert result.tokens == ctxpack.count_tokens(result.messages, model="gpt-4o")
        assert result.tokens < ctxpack.count_tokens(messages, model="gpt-4o")
    # Recorded before the stages, which then count the message as it is sent.
    (cleared,) = [d for d in result.decisions_for(holder.id) if d.stage == "writer"]
    assert cleared.action == "cleared"
    assert "reasoning" in cleared.reason and cleared.tokens_after < cleared.tokens_before


def test_apply_selection_drops_reasoning_no_request_sends() -> None:
    from ctxpack.selection import Selection, Workspace, apply_selection

    history = [
        {"role": "user", "content": "A?"},
        reasoning(1),
        {"role": "user", "content": "Well?"},
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateTokenCountWarning)
        workspace = Workspace(from_openai(history))
        alone = workspace.messages[1]
        result = apply_selection(Selection(include_messages=[0, 1, 2]), workspace)
        assert alone.id not in result.kept_ids
        assert result.tokens == ctxpack.count_tokens(result.messages, model="gpt-4o")
    last = result.decisions_for(alone.id)[-1]
    assert (last.stage, last.action, last.tokens_after) == ("writer", "dropped", 0)
