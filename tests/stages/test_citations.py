from __future__ import annotations

from typing import Any

from ctxpack import CitationInheritor

from ..helpers import ctx_of

# Message 3 cites wikipedia.org; message 4, without a source, inherits it.
CITED: list[dict[str, Any]] = [
    {"role": "system", "content": "Tu es un analyste.", "id": "m1"},
    {"role": "user", "content": "Quel est le PIB de la France ?", "id": "m2"},
    {
        "role": "assistant",
        "content": "Selon wikipedia.org, le PIB est de 2 800 milliards d'euros.",
        "id": "m3",
        "source": "https://fr.wikipedia.org/wiki/Produit_intérieur_brut",
    },
    {"role": "assistant", "content": "Donc le PIB par habitant serait...", "id": "m4"},
]


def test_message_4_inherits_the_source_of_message_3() -> None:
    out = CitationInheritor()(ctx_of(CITED))
    sources = {m.id: m.source for m in out.messages}
    assert sources == {
        "m1": None,
        "m2": None,
        "m3": "https://fr.wikipedia.org/wiki/Produit_intérieur_brut",
        "m4": "https://fr.wikipedia.org/wiki/Produit_intérieur_brut",
    }
    (decision,) = out.decisions
    assert (decision.stage, decision.action, decision.message_id) == ("citations", "cited", "m4")
    assert "'m3'" in decision.reason
    assert "wikipedia" in decision.reason
    # Only the source changes: the text is untouched.
    assert out.messages[3].text == CITED[3]["content"]


def test_nearest_earlier_source_wins_and_a_new_source_takes_over() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "id": "a", "source": "doc:1"},
        {"role": "assistant", "content": "b", "id": "b"},
        {"role": "user", "content": "c", "id": "c", "source": "doc:2"},
        {"role": "assistant", "content": "d", "id": "d"},
    ]
    out = CitationInheritor()(ctx_of(history))
    assert [m.source for m in out.messages] == ["doc:1", "doc:1", "doc:2", "doc:2"]


def test_messages_before_any_source_and_system_messages_cite_nothing() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "id": "a"},
        {"role": "user", "content": "b", "id": "b", "source": "doc:1"},
        {"role": "system", "content": "c", "id": "c"},
        {"role": "developer", "content": "d", "id": "d"},
    ]
    ctx = ctx_of(history)
    assert CitationInheritor()(ctx) is ctx


def test_max_distance_limits_inheritance() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "id": "a", "source": "doc:1"},
        {"role": "assistant", "content": "b", "id": "b"},
        {"role": "assistant", "content": "c", "id": "c"},
    ]
    out = CitationInheritor(max_distance=1)(ctx_of(history))
    assert [m.source for m in out.messages] == ["doc:1", "doc:1", None]


def test_roles_option() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "id": "a", "source": "doc:1"},
        {"role": "assistant", "content": "b", "id": "b"},
        {"role": "user", "content": "c", "id": "c"},
    ]
    out = CitationInheritor(roles=("user",))(ctx_of(history))
    assert [m.source for m in out.messages] == ["doc:1", None, "doc:1"]


def test_input_context_is_untouched() -> None:
    ctx = ctx_of(CITED)
    CitationInheritor()(ctx)
    assert ctx.messages[3].source is None
    assert ctx.decisions == ()
