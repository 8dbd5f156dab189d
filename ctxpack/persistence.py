"""How a :class:`~ctxpack.Session` lives in a session store: its entries, state and originals.

The session keeps its state in memory, as always; a *backing* ties it to one session id in a
:class:`~ctxpack.store.SessionStore`. Each append is one entry (the messages and whatever the
append changed, as JSON), written under optimistic versioning: when another writer appended
first, the backing reads its entries, applies them, and applies the append again on top.

Originals are kept per session, under ids keyed by a secret of the session (an HMAC of the
text): the same text gets the same id within a session, and an id cannot be guessed from the
content by anyone who lacks the secret, nor found in another session.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import hmac
import inspect
import json
import random
import secrets
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ._internal import forks
from ._internal.arguments import json_problem
from ._internal.lost_replies import LostReplies
from .errors import (
    ArgumentsError,
    ArtifactNotFoundError,
    ConfigError,
    InvalidMessageError,
    StoreConflictError,
    StoreError,
)
from .messages import Message, provider_of, with_provider
from .store import (
    AsyncSessionStore,
    SessionStore,
    StoredSession,
    check_session_id,
    open_store,
    takes_life,
)

if TYPE_CHECKING:
    from .session._state import SessionState, Snapshot

__all__: list[str] = []

# Attempts before an append gives up because other writers keep appending first.
MAX_ATTEMPTS = 200
# How an original stored as the lines it adds to another begins (see SessionArtifacts.put).
EDIT_MARK = "ctxpack-edit:"
# The layout of what a session writes; a reader refuses a layout newer than its own. Format 2:
# the managed mode's growing lists travel in the entries, as what each append adds (format 1
# kept them whole in the state, rewritten at every append); format 1 is still read. Format 3:
# a filter record may name the result of a tool the provider ran (its result_id), which the
# releases reading format 2 cannot read; a session with no such record is still written as
# format 2, so that they go on reading it during a rolling deploy. Format 4: a file view may
# say which stretch of a kept shell's life its relative path belongs to (its ``within``), a
# sixth field the releases reading format 3 cannot read; written only by a session holding one.
FORMAT = 4

# The event loop of the AsyncSession call a worker thread runs for (see run_for): an
# original is read or stored on it, the loop the session was opened in being long closed
# when the session outlives its asyncio.run().
_CALLER: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "ctxpack_caller_loop", default=None
)


_T = TypeVar("_T")


def run_for(
    loop: asyncio.AbstractEventLoop, func: Callable[..., _T], /, *args: Any, **kwargs: Any
) -> _T:
    """``func(*args, **kwargs)`` in a worker thread, for a call awaited on ``loop``: the
    session's originals are read and stored on it."""
    _CALLER.set(loop)  # the thread runs in a copy of the caller's context: nothing leaks
    return func(*args, **kwargs)


def encode_message(message: Message, index: int) -> dict[str, Any]:
    """``message`` (the session's ``index``-th) as JSON, with the provider it was converted
    from; refused when JSON would not give it back as it is."""
    values = [
        (field, getattr(message, field), field) for field in ("content", "metadata", "extras")
    ]
    values += [
        ("tool_calls", call.__pydantic_extra__, f"tool_calls[{k}]")
        for k, call in enumerate(message.tool_calls or ())
        if call.__pydantic_extra__
    ]
    for field, value, path in values:
        problem = json_problem(value, path)
        if problem is not None:
            raise InvalidMessageError(
                f"{problem}: a stored session keeps JSON values (strings, finite numbers, "
                "booleans, None, lists, dicts with string keys), so that every replica reads "
                "the message as it was given; convert it first (a tuple to a list, a datetime "
                "to an ISO string)",
                index=index,
                field=field,
            )
    data: dict[str, Any] = {"message": message.model_dump(mode="json", exclude_defaults=True)}
    provider = provider_of(message)
    if provider is not None:
        data["provider"] = provider
    return data


def decode_message(data: Mapping[str, Any]) -> Message:
    """The message :func:`encode_message` encoded."""
    message = Message.model_validate(data["message"])
    provider = data.get("provider")
    return with_provider(message, provider) if provider else message


def artifact_key(secret: str, text: str) -> str:
    """The id of ``text`` among the originals of the session whose secret is ``secret``."""
    data = text.encode("utf-8", "surrogatepass")
    digest = hmac.new(bytes.fromhex(secret), data, hashlib.sha256).hexdigest()
    return "art_" + digest[:16]


class SessionArtifacts(forks.ProcessBound):
    """The originals of one stored session, as an :class:`~ctxpack.store.ArtifactStore`.

    During an append, originals are held back and written with the append's entry, all at
    once; outside one (a stage putting an original at render time), ``put`` writes through,
    unless the store holds no entry of the session yet: a store keeps originals only beside a
    session it holds (so that one written while the session is erased is not left behind), so
    those wait here for the first append.
    With an async store, ``put`` and ``get`` are called from a worker thread and run on the
    event loop of the call it works for (:func:`run_for`).
    """

    def __init__(
        self,
        store: SessionStore | AsyncSessionStore,
        session_id: str,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.loop = loop
        self.secret = secrets.token_hex(16)
        # Whether the store's put_artifact takes life= (see SessionStore.put_artifact).
        self._lives = takes_life(store, "put_artifact")
        self._held: dict[str, str] | None = None
        # The last original stored (or rebuilt from its edits), whole, with the secret then
        # and its id; and the last stored as the lines it adds to another ("extends"): a
        # compaction's index, which the next compaction's extends, though the originals of
        # the outputs cleared in between were stored after it (rebuilding it reads every
        # index before it). During an append, those put, until the store acknowledges them
        # (settle).
        self._last: dict[str, tuple[str, str, str]] = {}
        self._held_last: dict[str, tuple[str, str, str]] = {}
        # Whether the store holds an entry of the session, as last seen; the originals put
        # while it did not, for the next append.
        self.written = False
        self._unwritten: dict[str, str] = {}
        # The originals this life of the session is known to hold, written through by this
        # object: a stage at render time puts the same originals at every render, and a
        # server round trip each would cost more than the render.
        self._known: set[str] = set()

    def put(self, text: str, **metadata: Any) -> str:
        """Keep ``text`` as an original of the session; return its id.

        With ``extends=`` the id of an original whose lines ``text`` keeps in order (a
        compaction's index, and the one before it), only the lines added are written.
        """
        if not isinstance(text, str):
            raise ArgumentsError(
                f"put(): text must be a str (an artifact), got {type(text).__name__}"
            )
        ref = artifact_key(self.secret, text)
        extends = metadata.get("extends")
        stored = text if not isinstance(extends, str) else self._edit_of(text, extends)
        whole = (self.secret, ref, text)
        slots = ("last", "extends") if isinstance(extends, str) else ("last",)
        if self._held is not None:
            self._held[ref] = stored
            self._held_last.update(dict.fromkeys(slots, whole))
        elif not self.written:
            self._unwritten[ref] = stored
            self._last.update(dict.fromkeys(slots, whole))
        else:
            if ref not in self._known:
                lives = {"life": self.life()} if self._lives else {}
                self._run(self.store.put_artifact, self.session_id, ref, stored, **lives)
                self._known.add(ref)
            self._last.update(dict.fromkeys(slots, whole))
        return ref

    def get(self, artifact: str) -> str:
        """The text of one of the session's originals."""
        held = list(self._held_last.values()) if self._held is not None else []
        for last in held:
            if last[:2] == (self.secret, artifact):
                return last[2]
        # Read even when the text is known whole: the store says whether the session still
        # holds it (erased by another replica, or a put that found the session gone, it is
        # not to be served from memory); what is known spares rebuilding a chain of edits.
        text = self._stored(artifact)
        for last in self._last.values():
            if last[:2] == (self.secret, artifact):
                return last[2]
        if text.startswith(EDIT_MARK) and artifact_key(self.secret, text) != artifact:
            # Lines added to another original (an original that begins so is its own key).
            text = self._rebuilt(artifact, text)
            self._last.update(dict.fromkeys(("last", "extends"), (self.secret, artifact, text)))
        return text

    def _stored(self, artifact: str) -> str:
        if self._held is not None and artifact in self._held:
            return self._held[artifact]
        if artifact in self._unwritten:
            return self._unwritten[artifact]
        return str(self._run(self.store.get_artifact, self.session_id, artifact))

    def _edit_of(self, text: str, base: str) -> str:
        """``text`` as the lines it adds to the original ``base`` (whole when it does not keep
        every line of ``base`` in order, or ``base`` cannot be read)."""
        try:
            before = self.get(base).split("\n")
        except ArtifactNotFoundError:
            return text
        added: list[tuple[int, str]] = []
        kept = 0
        for k, line in enumerate(text.split("\n")):
            if kept < len(before) and line == before[kept]:
                kept += 1
            else:
                added.append((k, line))
        if kept < len(before):
            return text
        return EDIT_MARK + json.dumps({"base": base, "added": added}, ensure_ascii=False)

    def _rebuilt(self, artifact: str, edit: str) -> str:
        """The text the edit stored under ``artifact`` makes of its base, checked against the
        id (an HMAC of the text): the chain of edits down to a whole text is read back."""
        edits: list[list[list[Any]]] = []
        text = edit
        seen = {artifact}
        try:
            while text.startswith(EDIT_MARK):
                data = json.loads(text[len(EDIT_MARK) :])
                edits.append(data["added"])
                base = data["base"]
                if not isinstance(base, str) or base in seen:
                    raise ValueError("not an edit ctxpack wrote")
                seen.add(base)
                text = self._stored(base)
                if not text.startswith(EDIT_MARK) or artifact_key(self.secret, text) == base:
                    break
            lines = text.split("\n")
            for added in reversed(edits):
                merged: list[str] = []
                rest = iter(lines)
                for k, line in added:
                    while len(merged) < k:
                        merged.append(next(rest))
                    merged.append(line)
                merged.extend(rest)
                lines = merged
        except (ValueError, KeyError, TypeError, StopIteration) as exc:
            if isinstance(exc, ArtifactNotFoundError):
                # A base gone is no damage when the session was erased (by a user, another
                # replica) between the reads: the edit is gone too, and that is raised.
                self._stored(artifact)
            raise self._damaged(artifact, f"{type(exc).__name__}: {exc}") from exc
        whole = "\n".join(lines)
        if artifact_key(self.secret, whole) != artifact:
            raise self._damaged(artifact, "its text does not match its id")
        return whole

    def _damaged(self, artifact: str, why: str) -> StoreError:
        return StoreError(
            f"the stored original is damaged ({why})",
            url=self.store.url,
            operation=f"read artifact {artifact!r} of session {self.session_id!r}",
        )

    def _run(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.loop is None:
            return method(*args, **kwargs)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = _CALLER.get() or self.loop
        if running is loop:
            raise RuntimeError(
                "an async session's originals are read from a worker thread; "
                "use `await session.retrieve(...)`"
            )
        return asyncio.run_coroutine_threadsafe(method(*args, **kwargs), loop).result()

    def hold(self) -> None:
        self._held = {}
        self._held_last = {}

    def settle(self) -> None:
        """Note that the originals held for an append are stored."""
        self._last.update(self._held_last)
        self._held_last = {}
        self.written, self._unwritten = True, {}

    def release(self) -> dict[str, str]:
        """The originals an append writes: those held for it, and those put before the
        session had an entry in the store (kept until an append succeeds)."""
        held, self._held = {**self._unwritten, **(self._held or {})}, None
        return held

    def erased(self) -> None:
        """The session was erased: its next life has its own secret, and nothing of this one
        (not the originals last stored, kept whole in memory)."""
        self.secret = secrets.token_hex(16)
        self.written, self._unwritten, self._known = False, {}, set()
        self._last, self._held_last = {}, {}

    def life(self) -> str:
        """The id of this life of the session, for the store's ``append(life=...)``: derived
        from its secret, which each life draws anew (and every replica reads from the state),
        where the secret itself is not to be copied beside it."""
        return hashlib.sha256(b"ctxpack-life:" + bytes.fromhex(self.secret)).hexdigest()[:32]

    def __repr__(self) -> str:
        return f"SessionArtifacts({self.store.url!r}, session_id={self.session_id!r})"

    def _how_to_reopen(self) -> str:
        return f"open its session there: Session.open({self.session_id!r}, store=url)"


class Backing:
    """One session id in one store, and the version of it the session has applied.

    The store calls themselves are made here for a sync store (:meth:`sync`, :meth:`commit`)
    and by :class:`~ctxpack.AsyncSession` for an async one; what to do with their results is
    shared (:meth:`catch_up`, :meth:`prepare`, :meth:`failed`).
    """

    def __init__(
        self,
        store: SessionStore | AsyncSessionStore,
        session_id: str,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.store = store
        self.session_id = check_session_id(session_id)
        self.artifacts = SessionArtifacts(store, self.session_id, loop)
        self.version = 0
        # Whether the next entry must carry the window's growing lists whole: the session's
        # first, or the first on top of a format-1 state (which held them, and its entries
        # not).
        self.whole_window = True
        # The format the session is stored in, the oldest that holds its entries (3 once one
        # holds a record of a provider tool's result), and the one the append being written
        # moves it to: known from the state read and the entries written, where scanning the
        # session's records at every append would grow with it.
        self.format = 2
        self._writing = 2
        self._empty: Snapshot | None = None
        self.owns_store = False  # opened from a URL: closed with the session
        # Whether the store's append takes life= (see SessionStore.append): without it, an
        # append prepared before an erasure lands on a session started again and grown back
        # to the version it read, and writes the erased life's state there.
        self._lives = takes_life(store)
        self.lost = LostReplies()  # for a retry of a call whose reply was lost to store once

    def sync(self, session: SessionState) -> None:
        """Apply to ``session`` what the store holds beyond the version it has applied."""
        store: Any = self.store
        stored = self._call("read", store.load, self.session_id, since=self.version)
        if self.catch_up(session, stored):
            stored = self._call("read", store.load, self.session_id)
            self.catch_up(session, stored)

    def first_sync(self, session: SessionState) -> None:
        """:meth:`sync` as the session opens: failing (or interrupted), it closes a store
        opened from a URL, which the caller, left without a session, cannot close."""
        try:
            self.sync(session)
        except BaseException:
            if self.owns_store:
                with contextlib.suppress(Exception):  # the read's error is the one to raise
                    self.store.close()
            raise

    def catch_up(self, session: SessionState, stored: StoredSession) -> bool:
        """Apply ``stored`` (read from the session's version on) to ``session``; ``True`` if
        the session was erased meanwhile and must be read again from the start."""
        if self._empty is None:
            self._empty = session._snapshot()
        data = self._state_of(stored)
        if stored.version < self.version or (
            # Erased and written again to as many versions or more: each life of a session id
            # has its own secret, drawn by its first writer.
            self.version
            and data is not None
            and data.get("secret", self.artifacts.secret) != self.artifacts.secret
        ):
            # The session was erased (or expired), and perhaps started again.
            session._restore(self._empty)
            session._forget_texts()
            self.version = 0
            self.whole_window = True
            self.format = 2
            self.artifacts.erased()
            self.lost.forget()
            return True
        unsure = self.lost.looked_for()
        if not stored.entries and stored.state is None:
            return False
        before = session._snapshot()
        try:
            if data is not None and data["format"] > FORMAT:
                raise StoreError(
                    f"the session was written by a newer ctxpack (format {data['format']}, "
                    f"this one reads up to {FORMAT}); upgrade ctxpack",
                    url=self.store.url,
                    operation=f"read session {self.session_id!r}",
                )
            for version, text in enumerate(stored.entries, self.version + 1):
                entry = json.loads(text)
                session._apply_entry(entry)
                if unsure is not None:
                    self.lost.found(unsure, version, entry.get("write"))
            if data is not None:
                session._set_state(data["session"], data["format"])
                self.artifacts.secret = data["secret"]
        except Exception as exc:
            session._restore(before)
            if isinstance(exc, StoreError):
                raise
            raise self._damaged(exc) from exc
        self.version = stored.version
        self.artifacts.written = self.version > 0
        if data is not None:
            self.whole_window = data["format"] < 2
            self.format = max(2, data["format"])
        return False

    def _state_of(self, stored: StoredSession) -> dict[str, Any] | None:
        """The state ``stored`` holds, read (``None`` for a new session)."""
        if stored.state is None:
            return None
        try:
            data = json.loads(stored.state)
            if not isinstance(data, dict):
                raise TypeError(f"a state is an object, not {type(data).__name__}")
        except (ValueError, TypeError) as exc:
            raise self._damaged(exc) from exc
        return data

    def _damaged(self, exc: Exception) -> StoreError:
        return StoreError(
            f"the stored session is not one ctxpack wrote, or is damaged "
            f"({type(exc).__name__}: {exc})",
            url=self.store.url,
            operation=f"read session {self.session_id!r}",
        )

    def prepare(self, session: SessionState, snapshot: Snapshot) -> dict[str, Any]:
        """The store's ``append`` arguments for what changed since ``snapshot``."""
        # The entry's id, for a retry to tell whether it landed when its reply was lost
        # (readers ignore a key they do not know).
        write = self.lost.prepared(self.version + 1)
        entry = session._entry_since(snapshot, whole_window=self.whole_window)
        entry["write"] = write
        # A record names a provider tool's result only when it has one (see encoded_record).
        names_results = any("result_id" in record for record in entry["records"])
        state = session._state()
        # A view is [position, path, start, end, basis] before format 4, `within` its sixth.
        places_views = any(len(view) > 5 for view in state["views"])
        self._writing = max(self.format, 4 if places_views else 3 if names_results else 2)
        return {
            "entry": json.dumps(entry),
            "version": self.version,
            "state": json.dumps(
                {
                    "format": self._writing,
                    "session": state,
                    "secret": self.artifacts.secret,
                }
            ),
            "artifacts": self.artifacts.release(),
            **({"life": self.artifacts.life()} if self._lives else {}),
        }

    def committed(self) -> None:
        """Note that the store acknowledged the append :meth:`prepare` wrote."""
        self.version += 1
        self.whole_window = False
        self.format = self._writing
        self.artifacts.settle()

    def transact(self, transact: Callable[[], Snapshot]) -> Snapshot:
        """Apply an append in memory, holding its originals back for the store."""
        self.artifacts.hold()
        try:
            return transact()
        except BaseException:
            self.artifacts.release()
            raise

    def commit(
        self, session: SessionState, transact: Callable[[], Snapshot], retry: object = None
    ) -> None:
        """Apply an append to ``session`` and write it, on top of other writers' (``retry``:
        the call's key, see ``_internal/lost_replies.py``)."""
        store: Any = self.store
        for attempt in range(MAX_ATTEMPTS):
            self.sync(session)
            if self.lost.retried(retry):
                return
            before = self.transact(transact)
            try:
                arguments = self.prepare(session, before)
                self._call("append to", store.append, self.session_id, **arguments)
            except BaseException as exc:
                session._restore(before)
                # A conflict too: Redis resending a lost reply's append may find another's.
                self.lost.unacknowledged(retry)
                if not isinstance(exc, StoreConflictError):
                    raise
                time.sleep(backoff_delay(attempt))
                continue
            self.committed()
            return
        raise self.gave_up()

    def gave_up(self) -> StoreError:
        return StoreError(
            f"other writers appended first {MAX_ATTEMPTS} times in a row; try again",
            url=self.store.url,
            operation=f"append to session {self.session_id!r}",
        )

    def _call(self, what: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call a store method; an error that is not ctxpack's own becomes a
        :class:`StoreError`."""
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            raise self.failed(what, exc) from exc

    def failed(self, what: str, exc: Exception) -> Exception:
        """``exc`` from a store call, as the error to raise: ctxpack's own errors as they are,
        any other wrapped in a :class:`StoreError` naming the store and the call."""
        if isinstance(exc, (StoreError, ConfigError, ArtifactNotFoundError, InvalidMessageError)):
            return exc
        return StoreError(
            f"{type(exc).__name__}: {exc}",
            url=getattr(self.store, "url", type(self.store).__name__),
            operation=f"{what} session {self.session_id!r}",
        )


def backoff_delay(attempt: int) -> float:
    """How long to wait after a conflict: longer each time, jittered so writers spread out."""
    return float(random.uniform(0, min(0.05, 0.001 * 2 ** min(attempt, 6))))


def open_backing(store: str | SessionStore, session_id: str) -> Backing:
    """A backing for ``session_id`` in ``store`` (a URL or a store)."""
    check_session_id(session_id)
    if isinstance(store, str):
        backing = Backing(open_store(store), session_id)
        backing.owns_store = True
        return backing
    return Backing(check_sync_store(store), session_id)


def check_sync_store(store: Any) -> SessionStore:
    """``store`` if a :class:`~ctxpack.Session` can call it, else the ``ConfigError`` saying
    what it takes."""
    if not isinstance(store, SessionStore):
        raise ConfigError(
            "store must be a store URL (sqlite:///PATH, postgresql://..., redis://..., "
            f"memory://) or a ctxpack.store.SessionStore, got {type(store).__name__}"
        )
    if inspect.iscoroutinefunction(store.load):
        # Both protocols have the same method names: a sync caller would get coroutines back.
        raise ConfigError(
            f"store: {type(store).__name__} is an AsyncSessionStore, whose methods are "
            "coroutines, for an AsyncSession: give a Session a store URL or a SessionStore "
            "(ctxpack.store.open_store(url))"
        )
    return store
