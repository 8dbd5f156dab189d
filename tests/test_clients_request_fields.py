"""A wrapped request's own fields that the provider would refuse (``tool_choice`` naming a tool
the request does not send, ``stream`` that is not a bool, ``model`` that is not a name,
Anthropic's ``max_tokens`` below 1): the wrapper says so, naming the argument, before anything
is sent and before a session is given the request's messages, with or without a session."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import ctxpack
from tests.api_rules import anthropic_problems
from tests.sdk_mock import (
    WEATHER_TOOL,
    Capture,
    anthropic_client,
    anthropic_message,
    async_anthropic_client,
    chat_completion,
    openai_client,
)
from tests.test_clients_responses import text_reply

QUESTION = {"role": "user", "content": "What is the weather in Paris?"}
ANTHROPIC_TOOL = {"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}
FLAT_TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}

Call = Callable[[Any, dict[str, Any]], Any]


def chat(client: Any, fields: dict[str, Any]) -> Any:
    return client.chat.completions.create(model="gpt-4o", messages=[QUESTION], **fields)


def responses(client: Any, fields: dict[str, Any]) -> Any:
    return client.responses.create(model="gpt-4o", input=[QUESTION], **fields)


def messages(client: Any, fields: dict[str, Any]) -> Any:
    fields = {"max_tokens": 100, **fields}
    return client.messages.create(model="claude-sonnet-4-5", messages=[QUESTION], **fields)


APIS: dict[str, tuple[Call, dict[str, Any], dict[str, Any]]] = {
    # name: (the call, a tool it may send, a tool_choice naming a tool it does not send)
    "chat": (chat, WEATHER_TOOL, {"type": "function", "function": {"name": "get_wether"}}),
    "responses": (responses, FLAT_TOOL, {"type": "function", "name": "get_wether"}),
    "messages": (messages, ANTHROPIC_TOOL, {"type": "tool", "name": "get_wether"}),
}


def wrapped(api: str, capture: Capture, session: ctxpack.Session | None) -> Any:
    limits: dict[str, Any] = {} if session is not None and session.window else {"window": 50_000}
    if api == "messages":
        return ctxpack.wrap_anthropic(anthropic_client(capture), session=session, **limits)
    return ctxpack.wrap_openai(openai_client(capture), session=session, **limits)


def reply(api: str) -> dict[str, Any]:
    if api == "chat":
        return chat_completion({"role": "assistant", "content": "Sunny."})
    if api == "responses":
        return text_reply("Sunny.")
    return anthropic_message([{"type": "text", "text": "Sunny."}])


SESSIONS: dict[str, Callable[[], ctxpack.Session | None]] = {
    "no session": lambda: None,
    "plain session": lambda: ctxpack.Session(model="gpt-4o"),
    "managed session": lambda: ctxpack.Session(model="gpt-4o", window=50_000),
}


def refused(
    api: str, session_kind: str, fields: dict[str, Any], error: type[Exception]
) -> pytest.ExceptionInfo[Exception]:
    """The request with ``fields`` fails with ``error``; nothing is sent, the session is
    given nothing, and the caller's fields are as they were."""
    capture = Capture(reply(api))
    session = SESSIONS[session_kind]()
    client = wrapped(api, capture, session)
    call = APIS[api][0]
    before = repr(fields)
    with pytest.raises(error) as info:
        call(client, fields)
    assert capture.requests == []
    assert session is None or session.transcript() == []
    assert repr(fields) == before
    return info


@pytest.mark.parametrize("session_kind", sorted(SESSIONS))
@pytest.mark.parametrize("api", sorted(APIS))
def test_a_tool_choice_naming_a_tool_not_sent_is_refused(api: str, session_kind: str) -> None:
    _, tool, choice = APIS[api]
    info = refused(api, session_kind, {"tools": [tool], "tool_choice": choice}, ctxpack.ConfigError)
    assert "tool_choice" in str(info.value) and "'get_wether'" in str(info.value)
    assert "get_weather" in str(info.value)  # the names it could be


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_tool_choice_naming_a_tool_without_tools_is_refused(api: str) -> None:
    choice = APIS[api][2]
    info = refused(api, "no session", {"tool_choice": choice}, ctxpack.ConfigError)
    assert "tool_choice" in str(info.value) and "no tools" in str(info.value)


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_tool_choice_naming_the_sessions_own_tool_is_sent(api: str) -> None:
    # The retrieve tool is the session's, added to the request: the model may be forced to it.
    capture = Capture(reply(api))
    client = wrapped(api, capture, ctxpack.Session(model="gpt-4o"))
    name = "retrieve_original"
    choice = {
        "chat": {"type": "function", "function": {"name": name}},
        "responses": {"type": "function", "name": name},
        "messages": {"type": "tool", "name": name},
    }[api]
    APIS[api][0](client, {"tool_choice": choice})
    assert capture.body["tool_choice"] == choice
    assert name in str(capture.body["tools"])


@pytest.mark.parametrize("value", ["yes", 1, "false"])
@pytest.mark.parametrize("api", sorted(APIS))
def test_a_stream_that_is_not_a_bool_is_refused(api: str, value: Any) -> None:
    info = refused(api, "no session", {"stream": value}, ctxpack.ConfigError)
    assert "stream must be True or False" in str(info.value)


@pytest.mark.parametrize("session_kind", sorted(SESSIONS))
@pytest.mark.parametrize("model", [5, ["gpt-4o"], "", None])
def test_a_request_model_that_is_not_a_name_is_refused_with_a_session_too(
    session_kind: str, model: Any
) -> None:
    capture = Capture(reply("chat"))
    session = SESSIONS[session_kind]()
    client = wrapped("chat", capture, session)
    # None too: the SDK sends it as null (its own check only asks that model= be there).
    with pytest.raises(ctxpack.ConfigError, match=r"model must be a (non-empty )?string"):
        client.chat.completions.create(model=model, messages=[QUESTION])
    assert capture.requests == []
    assert session is None or session.transcript() == []


@pytest.mark.parametrize("session_kind", sorted(SESSIONS))
@pytest.mark.parametrize("max_tokens", [0, None])
def test_anthropic_max_tokens_below_one_is_refused(session_kind: str, max_tokens: Any) -> None:
    info = refused("messages", session_kind, {"max_tokens": max_tokens}, ctxpack.ConfigError)
    assert "max_tokens must be a positive int" in str(info.value)


def test_the_async_client_checks_the_same_fields() -> None:
    capture = Capture(reply("messages"))
    client = ctxpack.wrap_anthropic(async_anthropic_client(capture), window=50_000)

    async def send() -> Any:
        return await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=[QUESTION],
            tools=[ANTHROPIC_TOOL],
            tool_choice={"type": "tool", "name": "nope"},
        )

    with pytest.raises(ctxpack.ConfigError, match="tool_choice"):
        asyncio.run(send())
    assert capture.requests == []


def test_chat_parse_with_a_session_without_tools_of_its_own_is_sent() -> None:
    capture = Capture(reply("chat"))
    session = ctxpack.Session(model="gpt-4o", window=50_000, retrieve_tool=False)
    client = ctxpack.wrap_openai(openai_client(capture), session=session)
    parsed = client.chat.completions.parse(model="gpt-4o", messages=[QUESTION])
    assert parsed.choices[0].message.content == "Sunny."
    assert "tools" not in capture.body


CHAT_TOOL = WEATHER_TOOL
WRONG_SHAPES = [
    # (api, the tool in another API's shape, the words the error must hold)
    ("chat", ANTHROPIC_TOOL, "Anthropic's shape"),
    ("chat", FLAT_TOOL, "the Responses API's flat shape"),
    ("responses", CHAT_TOOL, "the Chat Completions shape"),
    ("responses", ANTHROPIC_TOOL, "Anthropic's shape"),
    ("messages", CHAT_TOOL, "the Chat Completions shape"),
    ("messages", FLAT_TOOL, "the Responses API's flat shape"),
]


@pytest.mark.parametrize("session_kind", ["no session", "managed session"])
@pytest.mark.parametrize(("api", "tool", "shape"), WRONG_SHAPES)
def test_a_tool_in_another_apis_shape_is_refused_naming_its_position(
    api: str, tool: dict[str, Any], shape: str, session_kind: str
) -> None:
    # Each API refuses the others' shapes; sent as given, the request failed at the provider.
    builtin = {"type": "web_search"} if api == "responses" else {"type": "custom", "name": "x"}
    tools = [APIS[api][1], tool] if api != "messages" else [ANTHROPIC_TOOL, tool]
    info = refused(api, session_kind, {"tools": tools}, ctxpack.ConfigError)
    assert str(info.value).startswith("tools[1]: ") and shape in str(info.value)
    if api != "messages":  # a built-in tool is in no function shape: sent as given
        capture = Capture(reply(api))
        APIS[api][0](wrapped(api, capture, None), {"tools": [APIS[api][1], builtin]})
        assert capture.body["tools"][1] == builtin


EXTRA_BODY_CONFLICTS = [
    # (api, a field the wrapper packs or counts, given in extra_body, which the SDK sends in
    # place of the wrapper's)
    ("chat", {"messages": [QUESTION, {"role": "assistant", "content": "x" * 50}, QUESTION]}),
    ("chat", {"max_completion_tokens": 10**6}),
    ("chat", {"tools": [WEATHER_TOOL]}),
    ("responses", {"input": [QUESTION]}),
    ("responses", {"previous_response_id": "resp_0"}),
    ("messages", {"system": "Answer in French."}),
    ("messages", {"max_tokens": 10**6}),
]


@pytest.mark.parametrize("session_kind", ["no session", "managed session"])
@pytest.mark.parametrize(("api", "extra"), EXTRA_BODY_CONFLICTS)
def test_extra_body_holding_a_field_the_wrapper_packs_is_refused(
    api: str, extra: dict[str, Any], session_kind: str
) -> None:
    info = refused(api, session_kind, {"extra_body": extra}, ctxpack.ConfigError)
    (key,) = extra
    assert str(info.value).startswith(f"extra_body: {key!r}") and f"{key}=" in str(info.value)


def test_extra_body_with_other_fields_is_sent_as_given() -> None:
    capture = Capture(reply("chat"))
    client = wrapped("chat", capture, ctxpack.Session(model="gpt-4o", window=50_000))
    chat(client, {"extra_body": {"reasoning_effort": "low"}, "extra_headers": {"X-Probe": "1"}})
    assert capture.body["reasoning_effort"] == "low"
    assert capture.headers[-1]["x-probe"] == "1"


def server_side_client(capture: Capture) -> tuple[Any, ctxpack.Session]:
    policy = ctxpack.managed.WindowPolicy(window=200_000, server_side=True)
    session = ctxpack.Session(model="claude-sonnet-4-5", window=policy)
    return ctxpack.wrap_anthropic(anthropic_client(capture), session=session), session


def test_context_management_in_extra_body_is_the_requests_own_with_a_server_side_session() -> None:
    # As context_management= is: the session's is not added beside it (the SDK sent the
    # caller's over it, while the session took its own edits as sent).
    capture = Capture(reply("messages"))
    client, _ = server_side_client(capture)
    own = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    client.beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=100,
        messages=[QUESTION],
        extra_body={"context_management": own},
    )
    assert capture.body["context_management"] == own
    bare = Capture(reply("messages"))
    server_side_client(bare)[0].beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=100,
        messages=[QUESTION],
        context_management=own,
    )
    assert capture.headers[-1]["anthropic-beta"] == bare.headers[-1]["anthropic-beta"]


@pytest.mark.parametrize("betas", ["context-management-2025-06-27", [5]])
def test_anthropic_betas_that_are_not_a_list_of_names_are_refused(betas: Any) -> None:
    # A lone string was read as its characters ("c,o,n,t,...") or, with a server-side
    # session, replaced by the session's betas.
    capture = Capture(reply("messages"))
    client, session = server_side_client(capture)
    with pytest.raises(ctxpack.ConfigError, match="betas"):
        client.beta.messages.create(
            model="claude-sonnet-4-5", max_tokens=100, messages=[QUESTION], betas=betas
        )
    assert capture.requests == [] and session.transcript() == []


def langchain_middleware(kind: str) -> Any:
    """A ``PackingMiddleware`` or a ``SessionMiddleware`` for gpt-4o in a 50,000-token window."""
    from ctxpack.integrations.langchain_agent import PackingMiddleware, SessionMiddleware

    middleware = PackingMiddleware if kind == "packing" else SessionMiddleware
    return middleware(window=50_000, model="gpt-4o")


def langchain_request(**fields: Any) -> Any:
    """A LangChain agent's model request asking the weather in Paris, with ``fields``."""
    from types import SimpleNamespace

    from langchain.agents.middleware import ModelRequest
    from langchain_core.messages import AIMessage, HumanMessage

    from tests.adapters.test_langchain_agent import RecordingChatModel

    return ModelRequest(
        model=RecordingChatModel(script=[AIMessage("ok")]),
        messages=[HumanMessage("Weather in Paris?")],
        runtime=SimpleNamespace(config={"configurable": {"thread_id": "t"}}),
        **fields,
    )


@pytest.mark.parametrize("middleware", ["packing", "session"])
@pytest.mark.parametrize("choice", ["get_wether", {"type": "function", "function": {"name": "x"}}])
def test_a_langchain_tool_choice_naming_a_tool_not_sent_is_refused(
    middleware: str, choice: Any
) -> None:
    # LangChain's chat models send a tool name as the forced function, unchecked.
    packer = langchain_middleware(middleware)

    def request(tool_choice: Any) -> Any:
        return langchain_request(tools=[WEATHER_TOOL], tool_choice=tool_choice)

    with pytest.raises(ctxpack.ConfigError, match="tool_choice: forces the tool") as info:
        packer.pack_request(request(choice))
    assert "'get_weather'" in str(info.value)
    assert packer.pack_request(request("get_weather")).tool_choice == "get_weather"


@pytest.mark.parametrize("messages", [None, "Weather in Oslo?"])
def test_the_tool_runner_refuses_messages_that_are_not_a_list_before_its_first_turn(
    messages: Any,
) -> None:
    # The SDK's runner read them first: "'NoneType' object is not iterable" from inside it, or
    # a string taken as its characters, one message each.
    from anthropic import beta_tool

    @beta_tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "3 C"

    capture = Capture(reply("messages"))
    client = ctxpack.wrap_anthropic(anthropic_client(capture), window=50_000)
    with pytest.raises(ctxpack.InvalidMessageError, match=r"^messages: expected a list"):
        client.beta.messages.tool_runner(
            tools=[get_weather],
            thread=False,
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=messages,
        )
    assert capture.requests == []


@pytest.mark.parametrize("middleware", ["packing", "session"])
@pytest.mark.parametrize("max_tokens", ["4000", -1, True, 2.5])
def test_a_langchain_max_tokens_that_is_not_a_count_is_refused(
    middleware: str, max_tokens: Any
) -> None:
    # It was read as no reply room at all: the prompt could fill the window the reply needs.
    packer = langchain_middleware(middleware)
    request = langchain_request(model_settings={"max_tokens": max_tokens})
    with pytest.raises(ctxpack.ConfigError, match=r"model_settings\['max_tokens'\] must be"):
        packer.pack_request(request)


# tool_choice that makes the model call some tool: OpenAI refuses "required" without tools
# (tool_choice is only allowed when tools are specified), Anthropic {"type": "any"} too (any
# of the tools given: none were).
ANY_TOOL = {"chat": "required", "responses": "required", "messages": {"type": "any"}}


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_tool_choice_of_any_tool_without_tools_is_refused(api: str) -> None:
    session = ctxpack.Session(model="gpt-4o", retrieve_tool=False)
    for fields in ({"tool_choice": ANY_TOOL[api]}, {"tool_choice": ANY_TOOL[api], "tools": []}):
        for kind, made in (("no session", None), ("session", session)):
            capture = Capture(reply(api))
            with pytest.raises(ctxpack.ConfigError, match="tool_choice") as info:
                APIS[api][0](wrapped(api, capture, made), fields)
            assert "no tools" in str(info.value), kind
            assert capture.requests == [] and session.transcript() == []


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_tool_choice_of_any_tool_with_the_sessions_retrieve_tool_is_sent(api: str) -> None:
    capture = Capture(reply(api))
    APIS[api][0](
        wrapped(api, capture, ctxpack.Session(model="gpt-4o")), {"tool_choice": ANY_TOOL[api]}
    )
    assert capture.body["tool_choice"] == ANY_TOOL[api] and "retrieve_original" in str(capture.body)


@pytest.mark.parametrize(
    ("api", "choice", "said"),
    [
        ("chat", 5, "'none', 'auto', 'required'"),
        ("chat", "always", "'none', 'auto', 'required'"),
        ("responses", ["auto"], "'none', 'auto', 'required'"),
        ("messages", 5, "{'type': 'auto'}"),
        # Anthropic's tool_choice is an object: the string OpenAI takes is refused.
        ("messages", "auto", "{'type': 'auto'}"),
        ("messages", {"type": "required"}, "'auto', 'any', 'tool', 'none'"),
    ],
)
@pytest.mark.parametrize("session_kind", sorted(SESSIONS))
def test_a_tool_choice_of_the_wrong_type_is_refused_naming_what_is_valid(
    api: str, choice: Any, said: str, session_kind: str
) -> None:
    fields = {"tools": [APIS[api][1]], "tool_choice": choice}
    info = refused(api, session_kind, fields, ctxpack.ConfigError)
    assert str(info.value).startswith("tool_choice") and said in str(info.value)


@pytest.mark.parametrize("session_kind", sorted(SESSIONS))
@pytest.mark.parametrize("api", sorted(APIS))
def test_tools_with_a_name_given_twice_are_refused(api: str, session_kind: str) -> None:
    # Both providers refuse a request defining a tool name twice.
    tool = APIS[api][1]
    info = refused(api, session_kind, {"tools": [tool, dict(tool)]}, ctxpack.ConfigError)
    assert "tools[1]" in str(info.value) and "'get_weather'" in str(info.value)


def marked(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


@pytest.mark.parametrize("session_kind", sorted(SESSIONS))
def test_more_than_four_cache_breakpoints_are_refused(session_kind: str) -> None:
    # Anthropic: "A maximum of 4 blocks with cache_control may be provided", counting the
    # tools, the system prompt and the messages.
    tool = {**ANTHROPIC_TOOL, "cache_control": {"type": "ephemeral"}}
    system = [marked("You are terse."), marked("Answer in French.")]
    question = {"role": "user", "content": [marked("Weather?"), marked("In Paris.")]}
    capture = Capture(reply("messages"))
    session = SESSIONS[session_kind]()
    client = wrapped("messages", capture, session)
    with pytest.raises(ctxpack.ConfigError, match="cache_control") as info:
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            tools=[tool],
            system=system,
            messages=[question],
        )
    assert "5" in str(info.value) and "at most 4" in str(info.value)
    assert capture.requests == [] and (session is None or session.transcript() == [])
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=100, system=system, messages=[question]
    )
    assert anthropic_problems(capture.body) == []


def text_marked(text: str, mark: bool) -> list[dict[str, Any]]:
    return [marked(text)] if mark else [{"type": "text", "text": text}]


@pytest.mark.parametrize("session_kind", ["plain session", "managed session"])
def test_a_session_never_sends_more_than_four_cache_breakpoints(session_kind: str) -> None:
    # Each request marks the system prompt and its two newest user turns (3 breakpoints, the
    # marks moving along the conversation). The session kept the marks of the messages it was
    # given, and sent those of earlier requests too: 5 on the fourth request, which Anthropic
    # refuses.
    capture = Capture(reply("messages"))
    session = SESSIONS[session_kind]()
    client = wrapped("messages", capture, session)
    for turn in range(1, 7):
        history: list[dict[str, Any]] = []
        for k in range(turn + 1):
            history.append({"role": "user", "content": text_marked(f"q{k}", k >= max(turn - 1, 1))})
            if k < turn:
                history.append({"role": "assistant", "content": text_marked("ok", False)})
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=50,
            system=text_marked("sys", True),
            messages=history,
        )
        assert anthropic_problems(capture.body) == [], turn
        # The newest turn keeps the caller's breakpoint.
        assert "cache_control" in capture.body["messages"][-1]["content"][-1]


def marks_of(body: dict[str, Any]) -> list[str]:
    """Where a sent Anthropic request's breakpoints are, in the prompt's order: ``system`` or
    the text of the marked message block."""
    system = body.get("system")
    found = ["system" for b in system if "cache_control" in b] if isinstance(system, list) else []
    for message in body["messages"]:
        content = message["content"]
        blocks = content if isinstance(content, list) else []
        found += [b["text"] for b in blocks if "cache_control" in b]
    return found


def moving_marks_history(turn: int, first_marked: bool) -> list[dict[str, Any]]:
    """A growing history whose newest two user turns are marked (Anthropic's recipe, the
    breakpoints moving along), and its first turn too when ``first_marked`` (a stable
    document every conversation starts with)."""
    history: list[dict[str, Any]] = []
    for k in range(turn + 1):
        mark = k >= max(turn - 1, 1) or (k == 0 and first_marked)
        history.append({"role": "user", "content": text_marked(f"q{k}", mark)})
        if k < turn:
            history.append({"role": "assistant", "content": text_marked("ok", False)})
    return history


@pytest.mark.parametrize("session_kind", ["plain session", "managed session"])
def test_a_session_keeps_the_earliest_and_the_newest_breakpoints(session_kind: str) -> None:
    # The first breakpoint caches the prefix every conversation shares (tools, system, a
    # document the first turn holds); the newest cache the growing conversation. Those in the
    # middle, left from earlier requests, go first: the first turn's mark stays.
    capture = Capture(reply("messages"))
    client = wrapped("messages", capture, SESSIONS[session_kind]())
    for turn in range(1, 7):
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=50,
            system="sys",
            messages=moving_marks_history(turn, first_marked=True),
        )
        assert anthropic_problems(capture.body) == [], turn
        marks = marks_of(capture.body)
        assert marks[0] == "q0" and marks[-2:] == [f"q{turn - 1}", f"q{turn}"], (turn, marks)
    assert marks == ["q0", "q4", "q5", "q6"]


@pytest.mark.parametrize("session_kind", ["plain session", "managed session"])
def test_a_session_keeps_the_system_prompts_breakpoint_beside_four_of_the_messages(
    session_kind: str,
) -> None:
    # At the fourth request the session holds marks on the system prompt and on four user
    # turns (each request's two newest): the system prompt's, the first, stays with the
    # newest three.
    capture = Capture(reply("messages"))
    client = wrapped("messages", capture, SESSIONS[session_kind]())
    for turn in range(1, 5):
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=50,
            system=text_marked("sys", True),
            messages=moving_marks_history(turn, first_marked=False),
        )
        assert anthropic_problems(capture.body) == [], turn
    assert marks_of(capture.body) == ["system", "q2", "q3", "q4"]


def test_a_key_named_cache_control_in_a_tools_schema_or_a_calls_input_is_no_breakpoint() -> None:
    schema = {"type": "object", "properties": {"cache_control": {"type": "string"}}}
    tools = [{**ANTHROPIC_TOOL, "name": f"t{i}", "input_schema": schema} for i in range(5)]
    call = {"type": "tool_use", "id": "toolu_1", "name": "t0", "input": {"cache_control": "x"}}
    history = [
        QUESTION,
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
    ]
    capture = Capture(reply("messages"))
    client = wrapped("messages", capture, None)
    client.messages.create(model="claude-sonnet-4-5", max_tokens=100, tools=tools, messages=history)
    assert capture.body["tools"][0]["input_schema"] == schema


@pytest.mark.parametrize("session_kind", ["plain session", "managed session"])
def test_a_breakpoint_moved_to_the_newest_turn_is_no_change_of_history(session_kind: str) -> None:
    # Anthropic's prompt-caching guide marks the newest user turn and unmarks the one before
    # (and the system prompt may be marked or not): what the messages say is the same, so
    # the session goes on, where it refused the second request as another conversation.
    capture = Capture(reply("messages"))
    session = SESSIONS[session_kind]()
    assert session is not None
    client = wrapped("messages", capture, session)
    for turn in range(1, 5):
        history: list[dict[str, Any]] = []
        for k in range(turn + 1):
            history.append({"role": "user", "content": text_marked(f"q{k}", k == turn)})
            if k < turn:
                history.append({"role": "assistant", "content": text_marked("ok", False)})
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=50,
            system=text_marked("sys", turn % 2 == 1),
            messages=history,
        )
        assert anthropic_problems(capture.body) == [], turn
        assert "cache_control" in capture.body["messages"][-1]["content"][-1]
    texts = [m.text for m in session.transcript()]
    assert texts.count("q1") == 1 and texts[-1] == "q4"
    # An edit of what a message says is still refused.
    history[-1] = {"role": "user", "content": text_marked("q4 edited", True)}
    with pytest.raises(ctxpack.ConfigError, match="growing history"):
        client.messages.create(
            model="claude-sonnet-4-5", max_tokens=50, system="sys", messages=history
        )


def test_a_session_given_messages_before_breakpoints_were_left_out_still_matches_them() -> None:
    # A stored session holds each message's digest made when it was given: those made with
    # the breakpoints in (before this rule) still match the same message sent again.
    from ctxpack.integrations._session_feed import _digest, _same

    message = {"role": "user", "content": text_marked("q1", True)}
    before = _digest(message, marked=True)
    assert before != _digest(message)
    assert _same(message, before) and _same(message, _digest(message))
    assert not _same({"role": "user", "content": text_marked("q2", True)}, before)


@pytest.mark.parametrize("middleware", ["packing", "session"])
@pytest.mark.parametrize(
    ("tools", "named"),
    [
        ("get_weather", "tools must be a list"),
        ([WEATHER_TOOL, None], "tools[1]"),
        ([5], "tools[0]"),
    ],
)
def test_langchain_tools_it_cannot_read_are_a_config_error_naming_them(
    middleware: str, tools: Any, named: str
) -> None:
    # LangChain's convert_to_openai_tool raised its own ValueError from inside ctxpack, and a
    # string was read as one tool per character.
    packer = langchain_middleware(middleware)
    request = langchain_request(tools=tools)
    with pytest.raises(ctxpack.ConfigError) as info:
        packer.pack_request(request)
    assert named in str(info.value)
