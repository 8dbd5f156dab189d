from __future__ import annotations

from typing import Any

import pytest

import ctxpack
from ctxpack import PromptComposer

from ..helpers import ctx_of, ids

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse.", "id": "sys"},
    {"role": "user", "content": "first question", "id": "u1"},
    {"role": "assistant", "content": "first answer", "id": "a1"},
    {"role": "developer", "content": "Use British English.", "id": "dev"},
    {"role": "user", "content": "second question", "id": "u2", "pinned": True},
    {"role": "user", "content": "current question", "id": "u3"},
]


def test_protects_system_developer_pinned_and_the_current_question() -> None:
    out = PromptComposer()(ctx_of(HISTORY))
    assert out.protected == {"sys", "dev", "u2", "u3"}
    assert ids(out) == [m["id"] for m in HISTORY]
    reasons = {d.message_id: d.reason for d in out.decisions}
    assert reasons == {
        "sys": "system prompt",
        "dev": "developer instructions",
        "u2": "pinned",
        "u3": "the current question (last user message)",
    }
    assert {d.action for d in out.decisions} == {"pinned"}
    assert {d.stage for d in out.decisions} == {"compose"}


def test_keep_last_user_and_protect_developer_are_options() -> None:
    out = PromptComposer(keep_last_user=False, protect_developer=False)(ctx_of(HISTORY))
    assert out.protected == {"sys", "u2"}


def test_the_last_user_message_is_protected_even_when_already_pinned() -> None:
    history: list[dict[str, Any]] = [*HISTORY[:5]]  # the pinned u2 is now the last user message
    out = PromptComposer()(ctx_of(history))
    assert out.protected == {"sys", "dev", "u2"}
    assert [d.message_id for d in out.decisions] == ["sys", "dev", "u2"]


def test_adds_system_and_developer_after_the_existing_system_messages() -> None:
    composer = PromptComposer(system="Cite your sources.", developer="Answer in French.")
    out = composer(ctx_of(HISTORY))
    assert [(m.role, m.text) for m in out.messages[:3]] == [
        ("system", "You are terse."),
        ("system", "Cite your sources."),
        ("developer", "Answer in French."),
    ]
    system, developer = out.messages[1], out.messages[2]
    assert system.id in out.protected
    assert developer.id in out.protected
    let_go = PromptComposer(developer="Answer in French.", protect_developer=False)
    loose = let_go(ctx_of(HISTORY))
    assert loose.messages[1].role == "developer"
    assert loose.protected == {"sys", "u2", "u3"}
    # Added messages are announced, never silent, even when nothing protects them.
    for added in (system, developer):
        assert any(d.message_id == added.id and d.reason.startswith("added") for d in out.decisions)


def test_does_not_repeat_instructions_already_present() -> None:
    composer = PromptComposer(system="You are terse.", developer="Use British English.")
    out = composer(ctx_of(HISTORY))
    assert ids(out) == [m["id"] for m in HISTORY]


def test_added_ids_do_not_collide() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi", "id": "system"}]
    out = PromptComposer(system="Be kind.")(ctx_of(history))
    assert ids(out) == ["system-2", "system"]


def test_input_context_is_untouched() -> None:
    ctx = ctx_of(HISTORY)
    PromptComposer(system="New.")(ctx)
    assert ids(ctx) == [m["id"] for m in HISTORY]
    assert ctx.protected == frozenset()
    assert ctx.decisions == ()


def test_repr_reads_like_the_constructor() -> None:
    assert repr(PromptComposer(system="x")) == (
        "PromptComposer(system='x', developer=None, keep_last_user=True, protect_developer=True)"
    )
    assert isinstance(PromptComposer(), ctxpack.pipeline.Stage)


@pytest.mark.parametrize("option", ["system", "developer"])
def test_an_instruction_no_provider_accepts_is_refused_naming_the_option(option: str) -> None:
    # A lone surrogate: valid in a str, not in UTF-8. Refused when the stage is configured, not
    # at the first pack as a message's content with no index.
    with pytest.raises(ctxpack.ConfigError, match=rf"PromptComposer: {option}=.*lone surrogate"):
        PromptComposer(**{option: "Be brief.\ud800"})
