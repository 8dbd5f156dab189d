"""The example chatbot backend (examples/chatbot_backend.py), served in process: two replicas
on one SQLite store take turns serving a user; retries are answered once; erasure erases."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chatbot_backend.py"


@pytest.fixture(scope="module")
def backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chatbot_backend", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chatbot_backend"] = module
    spec.loader.exec_module(module)
    return module


def message(turn: int) -> str:
    return f"Turn {turn}: tell me about the trip to Lisbon and the hotel near the river. " * 4


def test_replicas_share_each_users_conversation(backend: ModuleType, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    with (
        TestClient(backend.create_app(url)) as one,
        TestClient(backend.create_app(url)) as two,
    ):
        for turn in range(12):
            replica = (one, two)[turn % 2]
            answer = replica.post("/chat/alice", json={"turn": str(turn), "message": message(turn)})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            # The prompt the model received fits its window, as the model counted it.
            assert body["prompt_tokens"] <= backend.WINDOW - backend.REPLY_TOKENS
        history = two.get("/chat/alice").json()
        assert [m["id"] for m in history] == [f"{r}-{t}" for t in range(12) for r in "ua"]
        assert history[0]["content"] == message(0)
        # A retry (the client never saw the answer) gets the same reply; nothing is added.
        again = one.post("/chat/alice", json={"turn": "11", "message": message(11)}).json()
        assert again["reply"] == history[-1]["content"] and again["retried"]
        assert len(one.get("/chat/alice").json()) == 24
        assert two.post("/chat/bob", json={"turn": "0", "message": "hi"}).status_code == 200
        assert one.delete("/chat/alice").status_code == 204
        assert two.get("/chat/alice").json() == []
        assert [m["id"] for m in one.get("/chat/bob").json()] == ["u-0", "a-0"]


def test_a_question_stored_by_a_replica_that_died_is_answered_once(
    backend: ModuleType, tmp_path: Path
) -> None:
    import ctxpack

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    # The first replica stored the question, then died before answering.
    session = ctxpack.Session.open("carol", store=url, model=backend.MODEL)
    session.append({"role": "user", "content": "Where is my order?", "id": "u-0"})
    session.close()
    with TestClient(backend.create_app(url)) as replica:
        answer = replica.post("/chat/carol", json={"turn": "0", "message": "Where is my order?"})
        assert answer.status_code == 200
        assert [m["id"] for m in replica.get("/chat/carol").json()] == ["u-0", "a-0"]


def test_a_turn_answered_while_the_user_erases_the_chat_keeps_nothing(
    backend: ModuleType, tmp_path: Path
) -> None:
    from ctxpack.store import open_store

    url = f"sqlite:///{tmp_path / 'sessions.db'}"

    class ErasedMeanwhile(backend.MockModel):  # type: ignore[name-defined,misc]
        async def reply(self, messages: object, max_tokens: int) -> tuple[str, int]:
            other = open_store(url)  # another replica takes DELETE /chat/dave meanwhile
            other.delete_session("dave")
            other.close()
            return await super().reply(messages, max_tokens)  # type: ignore[no-any-return]

    with TestClient(backend.create_app(url, model=ErasedMeanwhile())) as replica:
        answer = replica.post("/chat/dave", json={"turn": "0", "message": "My PIN is 4711."})
        assert answer.status_code == 409, answer.text
        assert replica.get("/chat/dave").json() == []


def test_a_bad_request_says_what_to_send(backend: ModuleType) -> None:
    with TestClient(backend.create_app("memory://")) as client:
        answer = client.post("/chat/dave", json={"message": "no turn"})
        assert answer.status_code == 422 and "turn" in answer.json()["error"]
        assert client.get("/health").status_code == 200


@pytest.mark.parametrize("text", [None, 5, ["hi"], {"text": "hi"}])
def test_a_message_that_is_not_text_is_refused(backend: ModuleType, text: object) -> None:
    with TestClient(backend.create_app("memory://")) as client:
        answer = client.post("/chat/erin", json={"turn": "0", "message": text})
        assert answer.status_code == 422 and "message" in answer.json()["error"]
        assert client.get("/chat/erin").json() == []  # not kept as the text "None" or "5"


def test_a_message_that_is_not_valid_is_refused_not_skipped(backend: ModuleType) -> None:
    with TestClient(backend.create_app("memory://")) as client:
        assert client.post("/chat/fay", json={"turn": "0", "message": "hi"}).status_code == 200
        # A lone surrogate is no Unicode text: the session refuses it. Answering the earlier
        # turn instead, as if the message had been said, would be a wrong reply.
        answer = client.post("/chat/fay", content=b'{"turn": "1", "message": "\\ud800"}')
        assert answer.status_code == 422, answer.text
        assert [m["id"] for m in client.get("/chat/fay").json()] == ["u-0", "a-0"]


def test_a_message_too_long_for_the_window_is_413_not_a_retryable_503(
    backend: ModuleType,
) -> None:
    with TestClient(backend.create_app("memory://")) as client:
        answer = client.post("/chat/gus", json={"turn": "0", "message": "word " * 5_000})
        assert answer.status_code == 413, answer.text
        assert "too long" in answer.json()["error"]
        # The next, shorter turn is answered: the long one is left out of its prompt.
        assert client.post("/chat/gus", json={"turn": "1", "message": "hi"}).status_code == 200


def test_the_window_is_not_spent_on_a_tool_the_model_is_not_sent(backend: ModuleType) -> None:
    # About 700 tokens: under the window less the reply and the system prompt, but not under
    # that less the session's retrieve tool (some 230 tokens), which the backend never sends.
    text = "word " * 700
    with TestClient(backend.create_app("memory://")) as client:
        answer = client.post("/chat/hal", json={"turn": "0", "message": text})
        assert answer.status_code == 200, answer.text
        assert answer.json()["prompt_tokens"] <= backend.WINDOW - backend.REPLY_TOKENS
