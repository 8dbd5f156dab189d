"""The session store protocol: what a backend must do, and the helpers every backend shares.

A session store keeps, per session id, an append-only list of entries, one JSON state and the
session's originals (artifacts). Entries and state are opaque text to the store: the session
writes them and reads them back. A store never interprets them, so a new backend only moves
strings.

Concurrency is optimistic: the version of a session is the number of entries it holds, and
``append(..., version=v)`` succeeds only if the session is at version ``v``; otherwise it raises
:class:`~ctxpack.errors.StoreConflictError` and changes nothing. The entry, the new state and
the artifacts of one append are written together or not at all, and are durable when
``append`` returns.

An erased session id may start again from version 0 and reach a version a writer read before
the erasure; the version alone cannot tell the two lives apart. A store that takes ``life=``
in ``append`` records the life written at version 0 and refuses (as a conflict) an append
carrying another one, so that a write prepared before an erasure never lands on the next life.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from .._internal import forks
from .._internal.arguments import sendable, shown
from ..errors import ConfigError, StoreError

__all__ = [
    "AsyncSessionStore",
    "SessionStore",
    "StoredSession",
    "ThreadedAsyncStore",
]

MAX_SESSION_ID_CHARS = 256


@dataclass(frozen=True)
class StoredSession:
    """What a store holds for one session, from a version on.

    Attributes:
        version: The number of entries the session holds (0 for a session never appended to).
        entries: The entries after the ``since`` asked for, oldest first.
        state: The state written by the last append, or ``None`` for a new session.
    """

    version: int
    entries: tuple[str, ...] = ()
    state: str | None = None


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions live: entries appended under optimistic versioning, a state, artifacts.

    Every method is safe to call from several threads at once. ``url`` names the store in
    errors, its password hidden.
    """

    url: str

    def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        """The session's version, its entries after the first ``since`` and its state."""
        ...

    def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
    ) -> None:
        """Add ``entry`` as the session's entry number ``version`` (from 0), replace its state
        and add ``artifacts`` (id to text; an id already stored keeps its text), all at once.

        A store may take a keyword ``life=None`` too (every built-in store does; it is left
        out of the protocol's signature so that a store without it still type-checks, and a
        session passes it only to a store whose ``append`` names it): it names this life
        of the session: an append at version 0 records it, and one at a later version carrying
        another life than the recorded one is refused, the session having been erased and
        started again since the writer read it. ``None``, or none recorded (a session written
        before the store knew lives), is not checked; an append with ``None`` keeps the
        recorded one.

        Raises:
            StoreConflictError: the session is not at ``version``, or is in another life;
                nothing was written.
            StoreError: the store failed; nothing was written.
        """
        ...

    def put_artifact(self, session_id: str, artifact: str, text: str) -> None:
        """Store one original of the session under ``artifact`` (kept if already there), at
        once with respect to :meth:`delete_session`: nothing is stored for a session the store
        does not hold (erased, expired, or never appended to), nor (with a keyword ``life=``,
        optional as in :meth:`append`) for a session in another life, so that an original
        written while the session is erased, or after it started again, is never left
        behind."""
        ...

    def get_artifact(self, session_id: str, artifact: str) -> str:
        """The text of one original of the session.

        Raises:
            ArtifactNotFoundError: the session has no such artifact.
        """
        ...

    def delete_session(self, session_id: str) -> None:
        """Erase the session: its entries, its state and its originals, all at once. A
        session the store does not hold (never written, already erased, expired) is no error,
        so that an erasure may be retried.

        Raises:
            ConfigError: ``session_id`` is not an id (a non-empty str of at most 256
                characters, no NUL).
            StoreError: the store failed, is closed or is read-only; retry the erasure.
        """
        ...

    def close(self) -> None:
        """Release connections; the data stays. A call made after it, or racing it, fails
        with a :class:`~ctxpack.errors.StoreError` saying the store is closed (or, begun
        before it, finishes)."""
        ...


@runtime_checkable
class AsyncSessionStore(Protocol):
    """:class:`SessionStore` with coroutines, for :class:`~ctxpack.AsyncSession`."""

    url: str

    async def load(self, session_id: str, *, since: int = 0) -> StoredSession: ...

    async def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
    ) -> None: ...

    async def put_artifact(self, session_id: str, artifact: str, text: str) -> None: ...

    async def get_artifact(self, session_id: str, artifact: str) -> str: ...

    async def delete_session(self, session_id: str) -> None: ...

    async def close(self) -> None: ...


class ThreadedAsyncStore(forks.ProcessBound):
    """A :class:`SessionStore` used from asyncio: each call runs in a worker thread.

    Args:
        store: The synchronous store (SQLite, memory, or your own).
    """

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.url = store.url
        self._lives = takes_life(store)
        self._put_lives = takes_life(store, "put_artifact")

    async def load(self, session_id: str, *, since: int = 0) -> StoredSession:
        return await asyncio.to_thread(self.store.load, session_id, since=since)

    async def append(
        self,
        session_id: str,
        entry: str,
        *,
        version: int,
        state: str,
        artifacts: Mapping[str, str] | None = None,
        life: str | None = None,
    ) -> None:
        # A store without lives (a third party's) is called as it was.
        lives = {"life": life} if self._lives else {}
        await asyncio.to_thread(
            self.store.append,
            session_id,
            entry,
            version=version,
            state=state,
            artifacts=artifacts,
            **lives,
        )

    async def put_artifact(
        self, session_id: str, artifact: str, text: str, *, life: str | None = None
    ) -> None:
        lives = {"life": life} if self._put_lives else {}
        await asyncio.to_thread(self.store.put_artifact, session_id, artifact, text, **lives)

    async def get_artifact(self, session_id: str, artifact: str) -> str:
        return await asyncio.to_thread(self.store.get_artifact, session_id, artifact)

    async def delete_session(self, session_id: str) -> None:
        await asyncio.to_thread(self.store.delete_session, session_id)

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)

    @property
    def purge_expired(self) -> Callable[[], Coroutine[Any, Any, int]]:
        """The store's ``purge_expired()`` as a coroutine: erase the sessions whose ``ttl`` has
        run out, return how many. Only for a store that has one (``hasattr`` says so): a
        store without (one that expires by itself, or keeps no ttl) has nothing to purge."""
        purge: Callable[[], int] | None = getattr(self.store, "purge_expired", None)
        if purge is None:
            raise AttributeError(
                f"{type(self.store).__name__} has no purge_expired(), so neither has its "
                "ThreadedAsyncStore"
            )

        async def purge_expired() -> int:
            return await asyncio.to_thread(purge)

        return purge_expired

    def __repr__(self) -> str:
        return f"ThreadedAsyncStore({self.store!r})"


# ---------------------------------------------------------------------------- shared helpers


def check_unicode(text: str, name: str) -> str:
    """``text`` if every store can keep it: SQLite, PostgreSQL and Redis take UTF-8, which has
    no lone surrogate (a memory store would keep one, and a session moved to a server lose it)."""
    return sendable(text, name, ConfigError)


def check_key(key: str, name: str) -> str:
    """``key`` (an id a store looks rows up by) if every store can keep it: valid Unicode,
    and no NUL, which PostgreSQL's text cannot hold (its texts are bytes, so may)."""
    at = key.find("\x00")
    if at >= 0:
        raise ConfigError(
            f"{name}: holds a NUL character at character {at}, which "
            "PostgreSQL cannot keep in an id; use an id without it"
        )
    return check_unicode(key, name)


def check_session_id(session_id: object) -> str:
    """``session_id`` if it is a usable id: a non-empty str of at most 256 characters, no NUL."""
    if not isinstance(session_id, str) or not session_id:
        raise ConfigError(f"session_id must be a non-empty str, got {shown(session_id)}")
    if len(session_id) > MAX_SESSION_ID_CHARS:
        raise ConfigError(
            f"session_id has {len(session_id)} characters; at most {MAX_SESSION_ID_CHARS}"
        )
    return check_key(session_id, "session_id")


def check_version(version: object) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise ConfigError(f"version must be an int >= 0, got {shown(version)}")
    return version


def check_append(version: object, entry: object, state: object, artifacts: object) -> int:
    """``version`` if an append's arguments are what a store keeps: a version, an entry and
    a state that are strings, and artifacts mapping string ids to string texts. Anything else
    would be stored as it is (a number, ``None``) and read back as something no session can
    load."""
    checked = check_version(version)
    for name, value in (("entry", entry), ("state", state)):
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a str, got {type(value).__name__}")
        check_unicode(value, name)
    if artifacts is not None:
        if not isinstance(artifacts, Mapping):
            raise ConfigError(
                f"artifacts must be a mapping of id to text, got {type(artifacts).__name__}"
            )
        for ref, text in artifacts.items():
            check_artifact(ref, text)
    return checked


def check_life(life: object) -> str | None:
    """``life`` if it is what an append may carry: ``None`` or a non-empty str of at most 256
    characters that every store can keep."""
    if life is None:
        return None
    if not isinstance(life, str) or not life or len(life) > MAX_SESSION_ID_CHARS:
        raise ConfigError(
            f"life must be None or a non-empty str of at most {MAX_SESSION_ID_CHARS} "
            f"characters, got {shown(life)}"
        )
    return check_key(life, "life")


def other_life(recorded: str | None, life: str | None) -> bool:
    """Whether an append carrying ``life`` is for another life of the session than the one
    ``recorded`` at its version 0 (neither known: no)."""
    return recorded is not None and life is not None and recorded != life


def takes_life(store: object, method: str = "append") -> bool:
    """Whether ``store``'s ``method`` (``append`` or ``put_artifact``) names a ``life``
    parameter. A store written before lives, or a third party's, may not: it is called
    without. A ``**kwargs`` does not count, since a wrapper taking it may pass it on to a store
    that has no ``life``."""
    try:
        parameters = inspect.signature(getattr(store, method)).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    life = parameters.get("life")
    return life is not None and life.kind is not inspect.Parameter.POSITIONAL_ONLY


def check_artifact(artifact: object, text: object = "") -> str:
    """``artifact`` if it is a str id, and ``text`` (when given) a str."""
    if not isinstance(artifact, str):
        raise ConfigError(f"an artifact id must be a str, got {type(artifact).__name__}")
    if not isinstance(text, str):
        raise ConfigError(
            f"artifact {artifact!r}: its text must be a str, got {type(text).__name__}"
        )
    check_key(artifact, "artifact id")
    check_unicode(text, f"artifact {artifact!r}")
    return artifact


def _seconds(value: object) -> float | None:
    """``value`` as a finite number of seconds, or ``None`` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)  # an int too large for a float overflows
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


def check_ttl(ttl: object) -> float | None:
    """``ttl`` in seconds if valid: ``None`` (keep forever) or a positive number."""
    if ttl is None:
        return None
    seconds = _seconds(ttl)
    if seconds is None or not seconds > 0:
        raise ConfigError(f"ttl must be a positive number of seconds or None, got {shown(ttl)}")
    return seconds


def check_timeout(timeout: object) -> float:
    """``timeout`` in seconds if valid: a finite number >= 0."""
    seconds = _seconds(timeout)
    if seconds is None or seconds < 0:
        raise ConfigError(f"timeout must be a finite number of seconds >= 0, got {shown(timeout)}")
    return seconds


def _userinfo(url: str) -> tuple[str, str, str] | None:
    """``url`` cut around the password of its user information (before, password, after),
    or ``None`` when it has none. The user information ends at the last ``@``: a password
    written unescaped may hold ``@``, ``/``, ``?`` or ``#``, and libpq reads it so."""
    match = re.match(r"^[a-z0-9+.-]+://([^:/@]*):", url, flags=re.IGNORECASE)
    at = url.rfind("@")
    if match is None or at < match.end():
        return None
    return url[: match.end()], url[match.end() : at], url[at:]


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, fit for errors and logs: the one in its
    user information, and a ``password=`` in its query (libpq and redis-py read both).

    Example:
        >>> redact_url("postgresql://app:s3cret@db:5432/chat")
        'postgresql://app:***@db:5432/chat'
    """
    cut = _userinfo(url)
    if cut is not None:
        url = f"{cut[0]}***{cut[2]}"
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url, flags=re.IGNORECASE)


def hide_password(text: str, url: str) -> str:
    """``text`` (a driver's message about ``url``) without ``url``'s password, nor the parts
    of it a driver may quote after misreading an unescaped ``/`` or ``@`` (as a port, a
    host)."""
    secrets = re.findall(r"[?&]password=([^&#]*)", url, flags=re.IGNORECASE)
    cut = _userinfo(url)
    if cut is not None:
        secrets.append(cut[1])
        secrets += [p for p in re.split(r"[@/?#:]", cut[1]) if len(p) >= 3]
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def store_options(
    url: str, names: tuple[str, ...], given: Mapping[str, Any], *, text: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    """ctxpack's options for a store: those among ``names`` in the URL's query (numbers, but
    for ``text``), then ``given`` (keyword arguments); and the URL without them.

    Raises:
        ConfigError: an unknown option, a number that is not one, or a bad ``ttl``.
    """
    parts = urlsplit(url)
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    settings: dict[str, Any] = {}
    for key in names:
        if key not in query:
            continue
        value = query.pop(key)
        try:
            settings[key] = value if key in text else float(value)
        except ValueError:
            raise ConfigError(
                f"store URL {redact_url(url)}: option {key}={value!r} must be a number"
            ) from None
    settings.update(given)
    unknown = set(settings) - set(names)
    if unknown:
        raise ConfigError(
            f"unknown store option(s) for {parts.scheme}://: {', '.join(sorted(unknown))}; "
            f"valid: {', '.join(names)}"
        )
    if "ttl" in settings:
        settings["ttl"] = check_ttl(settings["ttl"])
    if "timeout" in settings:
        settings["timeout"] = check_timeout(settings["timeout"])
    return urlunsplit(parts._replace(query=urlencode(query))), settings


def no_other_options(url: str, rest: str) -> None:
    """Refuse what is left of ``url``'s query (``rest``, from :func:`store_options`) for a
    store that passes nothing on to a driver: a misspelt option would be ignored."""
    left = parse_qs(urlsplit(rest).query, keep_blank_values=True)
    if left:
        raise ConfigError(
            f"unknown store option(s) in {redact_url(url)}: {', '.join(sorted(left))}"
        )


CLOSED = "the store is closed"


def closed_store(url: str, operation: str) -> StoreError:
    """The error of a call made on a closed store, or racing its ``close()``, the same on
    every backend (rather than a driver's own: a closed pool, a closed connection)."""
    return StoreError(CLOSED, url=url, operation=operation)


def missing_driver(package: str, extra: str, url: str) -> StoreError:
    """The error for a server URL whose driver is not installed."""
    return StoreError(
        f"the {package!r} package is not installed: pip install 'ctxpack[{extra}]'",
        url=redact_url(url),
        operation="open",
    )
