"""What fuzzing the OpenAI tool items found, kept as tests: the Responses API's
``custom_tool_call``, ``shell_call``, ``local_shell_call``, ``apply_patch_call``,
``computer_call`` and their outputs, the items of the
tools OpenAI runs (web search, file search, the code interpreter, MCP), Chat Completions'
custom tool calls, and ``render(system=...)``.

A valid history, with one of its items changed (a field of the wrong type, missing, ``None``,
empty, huge, nested too deep, a key that is not a string, bytes, an SDK object of another
kind) or the items moved (an output before its call, a call id twice, a server item alone at
the end), gives at every entry point either a result or ctxpack's own error naming the
message index and the field. A valid history goes through ``from_openai`` and back as it
came, and packing it sends no call without its output nor an output without its call.
"""

from __future__ import annotations

import asyncio
import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import CtxpackError, InvalidMessageError, Session
from ctxpack.adapters import from_openai, to_openai, validate_openai
from tests.sdk_mock import Capture, chat_completion, openai_client
from tests.test_clients_responses import text_reply

from .responses_histories import CALLS

openai_responses = pytest.importorskip("openai.types.responses")

Item = dict[str, Any]
USER: Item = {"role": "user", "content": "Fix the ledger tests."}
OUTPUTS = tuple(f"{kind}_output" for kind in CALLS)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------- valid histories


def _pair(kind: str, n: int, item_id: str | None, text: str) -> tuple[Item, Item]:
    """A call of ``kind`` and its output; the call under ``item_id`` when it has one."""
    cid = f"call_{n}"
    if kind == "shell_call":
        action = {"commands": [f"cat {text}.py", "git status"], "timeout_ms": 1000}
        call: Item = {"type": kind, "call_id": cid, "action": action, "status": "completed"}
        chunk = {"stdout": text, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
        output: Item = {"type": "shell_call_output", "call_id": cid, "output": [chunk]}
    elif kind == "apply_patch_call":
        operation = {"type": "update_file", "path": f"{text}.py", "diff": f"+{text} = 1\n"}
        call = {"type": kind, "call_id": cid, "status": "completed", "operation": operation}
        output = {"type": "apply_patch_call_output", "call_id": cid, "output": f"Done {text}"}
    elif kind == "local_shell_call":
        # The API requires this call's item id; its output names the call by "id".
        action = {"type": "exec", "command": ["bash", "-lc", f"cat {text}.py"], "env": {}}
        call = {"type": kind, "id": f"lsh_{n}", "call_id": cid, "action": action}
        call["status"] = "completed"
        output = {"type": "local_shell_call_output", "id": cid, "output": f"{text} = 3"}
    elif kind == "computer_call":
        action = {"type": "type", "text": text}
        call = {"type": kind, "id": f"cu_{n}", "call_id": cid, "action": action}
        call |= {"status": "completed", "pending_safety_checks": []}
        shot = {"type": "computer_screenshot", "image_url": f"https://example.com/{n}.png"}
        output = {"type": "computer_call_output", "call_id": cid, "output": shot}
    elif kind == "custom_tool_call":
        # A freeform input that looks like JSON stays text.
        call = {"type": kind, "call_id": cid, "name": "grep", "input": f'{{"q": "{text}"}}'}
        output = {"type": "custom_tool_call_output", "call_id": cid, "output": f"{text}.py:1"}
    else:
        call = {"type": kind, "call_id": cid, "name": "read", "arguments": f'{{"p": "{text}"}}'}
        output = {"type": "function_call_output", "call_id": cid, "output": f"{text} = 2"}
    if item_id is not None:
        call = {"type": call["type"], "id": item_id, **call}
        if kind in ("local_shell_call", "computer_call"):
            call["id"] = item_id
    return call, output


SERVER_ITEMS: list[Item] = [
    {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"type": "mcp_call", "server_label": "docs", "name": "f", "arguments": "{}", "output": "d"},
    {"type": "file_search_call", "status": "completed", "queries": ["q"], "results": []},
    {"type": "code_interpreter_call", "status": "completed", "code": "print(1)", "outputs": []},
    {"type": "mcp_list_tools", "server_label": "docs", "tools": []},
]
WORDS = st.sampled_from(["ledger", "parser", "cache", "Ünïcode", "a b"])


@st.composite
def histories(draw: st.DrawFn) -> list[Item]:
    """A Responses API history in the form ``to_openai(api="responses")`` writes it back: a
    turn's calls carry their item ids only after the turn's reasoning (which the API pairs
    them with), a server item stands in its turn before the calls."""
    items: list[Item] = [USER]
    n = 0
    for turn in range(draw(st.integers(1, 4))):
        reasoning = draw(st.booleans())
        if reasoning:
            items.append({"type": "reasoning", "id": f"rs_{turn}", "summary": []})
        if draw(st.integers(0, 3)) == 0:
            server = draw(st.sampled_from(SERVER_ITEMS))
            items.append({**server, "id": f"srv_{turn}"})
        pairs = []
        for _ in range(draw(st.integers(1, 3))):
            n += 1
            kind = draw(st.sampled_from(CALLS))
            pairs.append(_pair(kind, n, f"it_{n}" if reasoning else None, draw(WORDS)))
        items += [call for call, _ in pairs] + [output for _, output in pairs]
    if draw(st.booleans()):
        items.append({"role": "assistant", "content": "Done."})
    return items


@SETTINGS
@given(histories())
def test_a_valid_history_goes_through_from_openai_and_back_as_it_came(items: list[Item]) -> None:
    before = copy.deepcopy(items)
    validate_openai(items)
    assert to_openai(from_openai(items), api="responses") == items
    assert items == before


def _check_pairs(sent: list[Item]) -> None:
    calls = [item["call_id"] for item in sent if item.get("type") in CALLS]
    # A local shell's output names its call by "id".
    outputs = [item.get("call_id") or item["id"] for item in sent if item.get("type") in OUTPUTS]
    assert sorted(calls) == sorted(outputs), sent
    seen: set[str] = set()
    for item in sent:
        if item.get("type") in CALLS:
            seen.add(item["call_id"])
        elif item.get("type") in OUTPUTS:
            assert item.get("call_id", item.get("id")) in seen, "an output sent before its call"


@SETTINGS
@given(histories(), st.integers(60, 600))
def test_packing_never_sends_a_call_without_its_output_nor_an_output_alone(
    items: list[Item], budget: int
) -> None:
    try:
        result = ctxpack.pack(from_openai(items), budget=budget, model="gpt-5")
    except ctxpack.BudgetExceededError:
        return
    _check_pairs(to_openai(result.messages, api="responses"))


# ------------------------------------------------------------------- changed histories


def _deep(levels: int = 3000) -> list[Any]:
    nested: list[Any] = []
    for _ in range(levels):
        nested = [nested]
    return nested


GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.binary(max_size=4),
    st.sampled_from(
        [
            "",
            "x" * 200_000,
            "\ud800",
            '{"looks": "like json"}',
            [],
            {},
            [[[[[]]]]],
            {1: "an int key"},
            {"a": {"b": [None, math.inf]}},
            ("a", "tuple"),
            {"type": "shell_call"},
            [{"stdout": 5}],
        ]
    ),
    st.builds(object),
    st.builds(_deep),
)


@st.composite
def changed_item(draw: st.DrawFn, item: Item) -> Any:
    """``item`` with one field removed or changed, a value inside it changed, or a key that is
    not a string added."""
    item = copy.deepcopy(item)
    key = draw(st.sampled_from([*item, "extra"]))
    how = draw(st.sampled_from(["remove", "replace", "inside", "odd key"]))
    if how == "remove":
        item.pop(key, None)
    elif how == "replace":
        item[key] = draw(GARBAGE)
    elif how == "inside" and isinstance(item.get(key), dict) and item[key]:
        inner = item[key]
        inner[draw(st.sampled_from(sorted(inner)))] = draw(GARBAGE)
    elif how == "inside" and isinstance(item.get(key), list) and item[key]:
        inner = item[key]
        inner[draw(st.integers(0, len(inner) - 1))] = draw(GARBAGE)
    else:
        item[draw(st.sampled_from([1, b"k", None, ("t",)]))] = "v"
    return item


def _sdk_objects() -> list[Any]:
    chat = pytest.importorskip("openai.types.chat")
    anthropic = pytest.importorskip("anthropic.types")
    return [
        chat.ChatCompletionMessage(role="assistant", content="In the drawer."),
        anthropic.TextBlock(type="text", text="a block, not a message"),
        openai_responses.ResponseOutputText(type="output_text", text="a part", annotations=[]),
        openai_responses.ResponseFunctionWebSearch.model_construct(type="web_search_call"),
    ]


@st.composite
def changed_histories(draw: st.DrawFn) -> list[Any]:
    """A valid history, as Responses API items or in Chat Completions form (custom tool calls
    as ``{"type": "custom", "custom": {...}}``), with one change. A chat message's own extra
    fields are left alone: ctxpack sends them as given, and the SDK's JSON encoder, not
    ctxpack, is the judge of them (see docs/exceptions.md)."""
    items: list[Any] = draw(histories())
    if draw(st.booleans()):
        items = to_openai(from_openai(items))
    k = draw(st.integers(1, len(items) - 1))
    how = draw(st.sampled_from(["item", "item", "item", "swap", "twice", "alone", "sdk", "drop"]))
    if how == "item" and "role" not in items[k]:
        items[k] = draw(changed_item(items[k]))
    elif how == "item" and items[k].get("tool_calls"):
        calls = items[k]["tool_calls"]
        j = draw(st.integers(0, len(calls) - 1))
        inner = draw(st.sampled_from([key for key in ("custom", "function") if key in calls[j]]))
        changed = draw(changed_item(calls[j]))
        if draw(st.booleans()) and isinstance(changed.get(inner), dict):
            changed[inner] = draw(changed_item(changed[inner]))
        calls[j] = changed
    elif how == "swap":  # an output before its call, or a call after another turn
        j = draw(st.integers(1, len(items) - 1))
        items[k], items[j] = items[j], items[k]
    elif how == "twice":  # a call id, or an item id, twice
        items.insert(draw(st.integers(1, len(items))), copy.deepcopy(items[k]))
    elif how == "alone":  # a server item alone, at the end
        items.append({**draw(st.sampled_from(SERVER_ITEMS)), "id": "srv_end"})
    elif how == "sdk":
        items.insert(k, draw(st.sampled_from(_sdk_objects())))
    else:
        del items[k]
    return items


def _wrapped_responses(items: list[Any]) -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=4000)
    client.responses.create(model="gpt-5", input=items)


def _wrapped_chat(items: list[Any]) -> None:
    capture = Capture(chat_completion({"role": "assistant", "content": "ok"}))
    client = ctxpack.wrap_openai(openai_client(capture), window=4000)
    client.chat.completions.create(model="gpt-5", messages=items)


def _stored(items: list[Any]) -> None:
    session = Session.open("fuzz", store="memory://")
    session.extend(items)
    session.render(2000, provider="openai")


async def _async(items: list[Any]) -> None:
    session = await ctxpack.AsyncSession.open("fuzz", store="memory://")
    await session.extend(items)
    await session.render()


ENTRY_POINTS = {
    "from_openai": from_openai,
    "pack": lambda items: ctxpack.pack(from_openai(items), budget=800, model="gpt-5"),
    "validate_openai": validate_openai,
    "Session.extend": lambda items: Session().extend(items),
    "managed Session": lambda items: Session(window=4000).extend(items),
    "stored Session": _stored,
    "AsyncSession": lambda items: asyncio.run(_async(items)),
    "responses round trip": lambda items: to_openai(from_openai(items), api="responses"),
    "wrap_openai responses": _wrapped_responses,
    "wrap_openai chat": _wrapped_chat,
}


def _named(exc: InvalidMessageError, items: list[Any]) -> bool:
    """Whether the error names the message, and the field unless the entry itself is wrong."""
    if exc.index is None or not 0 <= exc.index < len(items):
        return False
    entry = items[exc.index]
    return bool(exc.field) or not isinstance(entry, dict)


@SETTINGS
@given(changed_histories())
def test_a_changed_history_gives_a_result_or_ctxpacks_error_naming_index_and_field(
    items: list[Any],
) -> None:
    for name, call in ENTRY_POINTS.items():
        try:
            call(items)
        except InvalidMessageError as exc:
            assert _named(exc, items), f"{name}: {exc!r}"
        except CtxpackError:
            pass


# ------------------------------------------------------------------ what the fuzzing found

SHELL, SHELL_OUTPUT = _pair("shell_call", 1, None, "ledger")
PATCH, _ = _pair("apply_patch_call", 2, None, "ledger")
SEARCH: Item = {**SERVER_ITEMS[0], "id": "ws_1"}


@pytest.mark.parametrize(
    ("item", "field"),
    [
        # json.dumps of the call's arguments raised TypeError.
        ({**SHELL, "action": {"commands": ["ls"], "env": b"bytes"}}, "action"),
        ({**PATCH, "operation": {"type": "delete_file", "path": object()}}, "operation"),
        # Sent as they came: the SDK's JSON encoder raised TypeError or ValueError.
        ({**SHELL, b"k": "v"}, "b'k'"),
        ({**SHELL, "status": math.nan}, "status"),
        ({**SEARCH, "action": {"query": b"q"}}, "action"),
        ({**SEARCH, "action": "\ud800"}, "action"),
        ({**SHELL_OUTPUT, "output": [{"stdout": "a", "outcome": math.inf}]}, "output"),
        # copy.deepcopy of the item raised RecursionError.
        ({**SHELL, "status": _deep()}, "status"),
        ({**SEARCH, "results": _deep()}, "results"),
    ],
    ids=lambda value: str(value)[:40] if isinstance(value, str) else "",
)
def test_an_item_sent_as_it_came_holding_what_json_cannot_carry_is_refused_naming_it(
    item: Item, field: str
) -> None:
    capture = Capture(text_reply())
    client = ctxpack.wrap_openai(openai_client(capture), window=4000)
    for call in (from_openai, validate_openai, lambda items: Session().extend(items)):
        with pytest.raises(InvalidMessageError) as info:
            call([USER, item])
        assert (info.value.index, info.value.field) == (1, field)
    with pytest.raises(InvalidMessageError) as info:
        client.responses.create(model="gpt-5", input=[USER, item])
    assert (info.value.index, info.value.field) == (1, field)
    assert capture.requests == []


@pytest.mark.parametrize("kind", [[], {}, ["shell_call"]])
def test_an_item_whose_type_is_a_list_or_an_object_is_refused_naming_it(kind: Any) -> None:
    # A set's membership test hashes the type: TypeError: unhashable type.
    for call in (
        from_openai,
        validate_openai,
        lambda items: Session().extend(items),
        lambda items: ctxpack.pack(items, budget=5000),
    ):
        # An SDK object built without validation (model_construct) too.
        built = openai_responses.ResponseCustomToolCall.model_construct(
            type=kind, call_id="c", name="grep", input=""
        )
        for item in ({**SHELL, "type": kind}, built):
            with pytest.raises(InvalidMessageError) as info:
                call([USER, item])
            assert info.value.index == 1 and info.value.field


@pytest.mark.parametrize("kind", [[], {}])
def test_a_users_own_metadata_under_the_responses_key_is_left_alone(kind: Any) -> None:
    # to_openai(api="responses") read it as ctxpack's item: TypeError: unhashable type.
    messages = [
        USER,
        {"role": "assistant", "content": "Done.", "metadata": {"openai_responses": {"type": kind}}},
        {"role": "user", "content": "And?", "metadata": {"openai_responses": [{"type": kind}]}},
    ]
    assert to_openai(messages, api="responses") == [
        USER,
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "And?"},
    ]


def _custom_call(call_id: str, given: str) -> Item:
    call = {"id": call_id, "type": "custom", "custom": {"name": "grep", "input": given}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        # content_digest() encoded them as UTF-8: UnicodeEncodeError.
        ([{**SHELL, "call_id": "\ud800"}], "call_id"),
        ([{"type": "custom_tool_call", "call_id": "c", "name": "\ud800", "input": ""}], "name"),
        ([_custom_call("\udfff", "")], "tool_calls[0].id"),
        ([_custom_call("c", "\ud800")], "tool_calls[0].custom.input"),
        ([{"role": "tool", "tool_call_id": "c\ud800", "content": "x"}], "tool_call_id"),
    ],
)
def test_an_id_or_a_name_holding_a_lone_surrogate_is_refused_naming_it(
    messages: list[Any], field: str
) -> None:
    for call in (from_openai, lambda items: Session().extend(items)):
        with pytest.raises(InvalidMessageError, match="surrogate") as info:
            call([USER, *messages])
        assert (info.value.index, info.value.field) == (1, field)


@pytest.mark.parametrize("kind", CALLS)
@pytest.mark.parametrize("lead", [[], [SEARCH], [{"type": "reasoning", "id": "rs", "summary": []}]])
def test_pack_given_the_items_joins_parallel_calls_as_from_openai_does(
    kind: str, lead: list[Item]
) -> None:
    # pack() joined parallel function_call items only: two shell calls went out as two
    # assistant messages, the first call's output after the second (refused by the API).
    first, first_output = _pair(kind, 1, None, "ledger")
    second, second_output = _pair(kind, 2, None, "parser")
    items = [USER, *lead, first, second, first_output, second_output]
    result = ctxpack.pack(items, budget=5000, model="gpt-5")
    validate_openai(result.to_openai())
    expected = ctxpack.pack(from_openai(items), budget=5000, model="gpt-5")
    assert result.to_openai() == expected.to_openai()


# ------------------------------------------------------------------- secret values hunted

PASSWORD = "Vq8nT2zLp4Rw"
ENV = f"DB_HOST=db.internal\nDB_PASSWORD={PASSWORD}\nDEBUG=true\n"


def _printing(kind: str, n: int, text: str) -> list[Item]:
    """Items whose result prints ``text``: a client tool's call and output, or a server item
    in an assistant turn."""
    if kind in SERVER_ITEMS_BY_TYPE:
        item = copy.deepcopy(SERVER_ITEMS_BY_TYPE[kind])
        if kind == "mcp_call":
            item["output"] = text
        else:
            item["outputs"] = [{"type": "logs", "logs": text}]
        return [{**item, "id": f"srv_{n}"}, {"role": "assistant", "content": "Read."}]
    call, output = _pair(kind, n, None, "x")
    if kind == "shell_call":
        output["output"][0]["stdout"] = text
    else:
        output["output"] = text
    return [call, output]


SERVER_ITEMS_BY_TYPE = {item["type"]: item for item in SERVER_ITEMS}
PRINTERS = [
    "shell_call",
    "apply_patch_call",
    "custom_tool_call",
    "mcp_call",
    "code_interpreter_call",
]


@pytest.mark.parametrize("later", PRINTERS)
@pytest.mark.parametrize("first", PRINTERS)
def test_a_secret_found_in_one_tool_item_is_redacted_alone_in_a_later_one(
    first: str, later: str
) -> None:
    items = [USER, *_printing(first, 1, ENV), *_printing(later, 2, f"{PASSWORD}\n")]
    session = Session(model="gpt-5", filters=False)
    session.extend(items)
    packed = ctxpack.pack(from_openai(items), budget=100_000, model="gpt-5")
    for messages in (session.render().messages, packed.messages):
        assert PASSWORD not in repr(to_openai(messages, api="responses"))


# ------------------------------------------------------------------ render(system=...)

SYSTEMS = st.one_of(
    GARBAGE,
    st.builds(lambda content: {"role": "system", "content": content}, GARBAGE),
    st.builds(lambda role: {"role": role, "content": "Today is Monday."}, GARBAGE),
    st.sampled_from(
        [
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "system", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            {"role": "system", "content": "x", "tool_calls": [{"id": "c"}]},
            {"role": "system", "content": "x", "metadata": 5},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "s"}]},
            {**SHELL},
            {1: "an int key"},
        ]
    ),
)


@SETTINGS
@given(SYSTEMS)
def test_render_system_gives_a_result_or_an_error_naming_the_system_argument(system: Any) -> None:
    opening = [{"role": "system", "content": "You help."}, USER]

    async def rendered() -> None:
        session = await ctxpack.AsyncSession.open("fuzz", store="memory://")
        await session.extend(opening)
        await session.render(system=system)

    def session(**options: Any) -> Session:
        opened = Session(**options)
        opened.extend(opening)
        return opened

    assert session().render(system="Today is Monday.").messages[0].text == "Today is Monday."
    for render in (
        lambda: session().render(system=system),
        lambda: session(window=4000).render(system=system),
        lambda: asyncio.run(rendered()),
    ):
        try:
            render()
        except InvalidMessageError as exc:
            assert exc.index is None and (exc.field or "").startswith("system"), repr(exc)
        except CtxpackError:
            pass
