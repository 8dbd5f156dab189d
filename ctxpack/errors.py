"""One exception tree for ctxpack.

Every error derives from :class:`CtxpackError`; each leaf also derives from the builtin a caller
would naturally catch (``ValueError`` for bad input, ``RuntimeError`` for a missing tokenizer), so
``except ValueError`` keeps working for code that does not know ctxpack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "ArtifactNotFoundError",
    "BudgetExceededError",
    "ConfigError",
    "CtxpackError",
    "InvalidMessageError",
    "SelectionError",
    "SessionErasedError",
    "StoreConflictError",
    "StoreError",
    "TokenizerUnavailableError",
    "WorkspacePathError",
]


class CtxpackError(Exception):
    """Root of every error raised by ctxpack."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle's default calls ``type(self)(*self.args)``: the one formatted message, which
        # the constructors taking their fields by keyword refuse. An error a process-pool
        # worker raised then broke the pool, and a celery result could not be read.
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[CtxpackError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An error as pickled: its message and fields, its constructor not called again."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidMessageError(CtxpackError, ValueError):
    """A message (or a provider payload) is malformed.

    Attributes:
        index: Position of the offending message in the input, or ``None`` for the payload itself.
        field: The offending field (``"role"``, ``"tool_calls[0].function.arguments"``...), or
            ``None`` when the whole entry is wrong.
    """

    def __init__(self, detail: str, *, index: int | None = None, field: str | None = None) -> None:
        self.index = index
        self.field = field
        self.detail = detail
        prefix = f"message {index}: " if index is not None else ""
        super().__init__(prefix + detail)


class BudgetExceededError(CtxpackError, ValueError):
    """What must be kept (system, developer and pinned messages, the tool definitions, the
    reserve) does not fit in the budget.

    Attributes:
        required: Tokens the mandatory messages need, reply priming, tool definitions and
            reserve included.
        budget: The budget that was asked for.
        pinned_ids: Ids of the messages that cannot be dropped.
        tool_tokens: Tokens of the tool definitions sent with the request (in ``required``).

    The message says what must be kept and how to make room; ``what``, ``fixes``, ``remedy``,
    ``limit`` and ``names`` word them where the caller knows more (the managed mode names its own
    arguments, and keeps messages no one pinned: the system prompt and the task; a client wrapper
    names the messages by their first words, as their ids are ctxpack's own).
    """

    def __init__(
        self,
        *,
        required: int,
        budget: int,
        pinned_ids: Sequence[str],
        tool_tokens: int = 0,
        what: str = "the system, developer and pinned messages and the current question",
        fixes: str = "raise the budget, lower the reserve",
        remedy: str = "unpin some of",
        names: Sequence[str] | None = None,
        limit: str = "the budget",
    ) -> None:
        self.required = required
        self.budget = budget
        self.pinned_ids = list(pinned_ids)
        self.tool_tokens = tool_tokens
        # ``names``: the messages as the caller knows them, where ids are ctxpack's own.
        shown = ", ".join(names[:5] if names is not None else map(repr, self.pinned_ids[:5]))
        more = f" and {len(self.pinned_ids) - 5} more" if len(self.pinned_ids) > 5 else ""
        if tool_tokens:
            what += f" with the tool definitions ({tool_tokens} tokens)"
            fixes += ", send fewer tools"
        super().__init__(
            f"{what} need {required} tokens but {limit} is {budget}; {fixes}, or {remedy}: "
            f"{shown}{more}"
        )


class TokenizerUnavailableError(CtxpackError, RuntimeError):
    """No tokenizer could be loaded for the requested model or encoding."""


class ConfigError(CtxpackError, ValueError):
    """A stage, pipeline or function was configured with an invalid value."""


# Public as ctxpack.tokens.ApproximateTokenCountWarning; defined here, below the counters, so that
# what counts a part (a document sent by id) can warn without importing them.
class ApproximateTokenCountWarning(UserWarning):
    """Token counts come from an approximation, not from the model's tokenizer."""


# Out of __all__: callers catch it as the ConfigError or the TypeError it is.
class ArgumentsError(ConfigError, TypeError):
    """A call with arguments the function does not take (a misspelt keyword, a positional
    argument where only keywords are taken; bytes or ``None`` where a function reading text
    takes a ``str``); the message names them and what is taken.

    Also a ``TypeError``: ``except TypeError`` still catches it, as it did Python's own.
    """


# Out of __all__: callers catch it as the ConfigError or the KeyError it is.
class UnknownNameError(ConfigError, KeyError):
    """A name given to edit something by (a pipeline's step, a scorer's signal) that it does not
    hold; the message lists the names it does.

    Also a ``KeyError``: ``except KeyError`` still catches it, as it did when the lookup raised
    the builtin.
    """

    def __str__(self) -> str:
        # KeyError's own __str__ would print the message inside quotes.
        return str(self.args[0])


# Out of __all__: callers catch it as the TypeError that pickle raises for what it cannot pickle.
class NotPicklableError(CtxpackError, TypeError):
    """An object bound to its process (a session, a store, a code index, a wrapped client:
    locks, connections) was pickled, to go to another process; the message says what to
    pass there instead.

    Attributes:
        kind: The object's class name.
    """

    def __init__(self, kind: str, *, instead: str) -> None:
        self.kind = kind
        super().__init__(
            f"a {kind} does not pickle: it holds this process's locks and connections, and "
            f"does not travel to another process (a ProcessPoolExecutor, multiprocessing, "
            f"celery); {instead}"
        )


# Out of __all__: callers catch it as the RuntimeError it is.
class ForkedWhileBusyError(CtxpackError, RuntimeError):
    """A session (or an async session) made before ``os.fork`` was used in the child, where its
    copy was taken while another of the parent's threads (or tasks) was changing it: the copy
    may be half changed, and is not used.

    Attributes:
        kind: The object's class name.
    """

    def __init__(self, kind: str, *, instead: str) -> None:
        self.kind = kind
        super().__init__(
            f"this {kind} was in use by another thread or task of the parent process when this "
            f"process forked, so its copy here may be half changed; {instead}"
        )


class ArtifactNotFoundError(CtxpackError, KeyError):
    """An artifact id is not in the store it was looked up in.

    Attributes:
        artifact: The id that was asked for.
        store: A description of the store (its path for SQLite).
    """

    def __init__(self, artifact: str, *, store: str) -> None:
        self.artifact = artifact
        self.store = store
        super().__init__(
            f"no artifact {artifact!r} in store {store!r}; ids come from put() on the same store "
            "(a result's decisions and markers name them)"
        )

    def __str__(self) -> str:
        # KeyError's own __str__ would print the message inside quotes.
        return str(self.args[0])


class WorkspacePathError(CtxpackError, ValueError):
    """A file path that a workspace refuses to read: outside its root, missing, or not a file.

    Attributes:
        path: The path as it was asked for.
        root: The workspace's root (``None`` when the workspace has none).
        detail: What is wrong with it, and what is valid.
    """

    def __init__(self, path: str, *, root: str | None, detail: str) -> None:
        self.path = path
        self.root = root
        self.detail = detail
        super().__init__(f"file {path!r}: {detail}")


class SelectionError(CtxpackError, ValueError):
    """A selection names items the workspace does not hold, or a file passage it cannot give.

    Every problem is listed at once, each naming the offending item and what exists, so that a
    selector (a small model) can correct all of them in one retry.

    Attributes:
        problems: One sentence per offending item.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        listed = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"the selection has {len(self.problems)} problem(s):\n{listed}")


class StoreError(CtxpackError, RuntimeError):
    """A store failed: it cannot be opened, read or written (a session store, or the SQLite
    file of a :class:`~ctxpack.code.CodeIndex`).

    Attributes:
        url: The store's URL, its password hidden.
        operation: What was attempted (``"open"``, ``"append to session 'u1'"``...).
        detail: What went wrong, and how to fix it when ctxpack knows.
    """

    def __init__(self, detail: str, *, url: str, operation: str) -> None:
        self.url = url
        self.operation = operation
        self.detail = detail
        super().__init__(f"store {url}: {operation} failed: {detail}")


class StoreConflictError(StoreError):
    """Another writer appended to the session first: the expected version is not the stored one,
    or it is, in another life of the session (erased and started again since it was read).

    A :class:`~ctxpack.Session` catches it, reads what the other writer appended and tries
    again; a store's own caller sees it only when calling ``append`` directly.

    Attributes:
        session_id: The session appended to.
        expected: The version the writer read.
        actual: The version in the store.
    """

    def __init__(self, *, url: str, session_id: str, expected: int, actual: int) -> None:
        self.session_id = session_id
        self.expected = expected
        self.actual = actual
        why = (
            f"the session is at version {actual}, not {expected}: another writer appended first"
            if actual != expected
            else f"the session at version {actual} is another life of it: it was erased and "
            "started again since it was read"
        )
        super().__init__(
            f"{why}; read the new entries and append again",
            url=url,
            operation=f"append to session {session_id!r}",
        )


class SessionErasedError(StoreError):
    """A reply given with ``after=`` answers a render of an erased session: the session was
    erased (or expired) since that render, perhaps started again, and what the reply says,
    made from the erased history, is not stored in the session's new life.

    Nothing was stored. Drop the reply (the user asked for the history it was made from to be
    erased); the session object has read the erasure and goes on from what the store holds.
    Not a :class:`StoreConflictError`: trying again would store the reply all the same.

    Attributes:
        session_id: The session appended to.
    """

    def __init__(self, *, url: str, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            "the session was erased (or expired) since the render the message answers "
            "(after=): a message made from the erased history is not stored in its new life; "
            "drop it, and render the session again",
            url=url,
            operation=f"append to session {session_id!r}",
        )
