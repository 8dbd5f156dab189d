"""A session's state: changed all or nothing, snapshotted, restored and stored."""

from __future__ import annotations

import copy
import hashlib
import hmac
import operator
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import compress, count
from typing import TYPE_CHECKING, Any, Literal

from .._internal import forks
from .._internal.arguments import optional_text
from .._internal.reasoning import summary_text
from .._internal.secret_values import BoundFingerprints, Fingerprints
from .._internal.views import FileRegion, ShellFolders, call_arguments, region_of_call
from ..errors import ConfigError, SessionErasedError
from ..filters import ToolOutputFilter
from ..guard import ArrivalGuard
from ..managed import WindowPolicy, WindowState
from ..messages import Message
from ..persistence import SessionArtifacts, decode_message, encode_message
from ..pipeline import Decision, Stage
from ..providers import Provider
from ..result import PackResult, origin_of
from ..store import ArtifactStore
from ..tokens import REPLY_PRIMING, CounterLike, TokenCounter, get_counter, message_sizes
from ._later import LaterValues
from ._options import _warn_if_beyond_the_model
from ._records import Call, FilterRecord, RecordKey, command_of, encoded_record, record_key
from ._repeats import RepeatedLines

if TYPE_CHECKING:
    from ..persistence import Backing


@dataclass(frozen=True)
class Snapshot:
    """A session's state at one moment, to go back to when an append fails."""

    # The transcript and the decisions only grow: their lengths suffice (and the ids in use
    # are those of the transcript).
    raw: int
    decisions: int
    compact: list[Message]
    calls: dict[str, Call]
    records: dict[RecordKey, FilterRecord]
    pending: list[int]
    views: list[tuple[int, FileRegion]]
    superseded: list[tuple[int, int]]
    provider: Provider
    extensions: dict[str, Any]
    window_state: WindowState
    full_tools: list[Mapping[str, Any]]
    found: int  # the secret values found (they only grow)


# The extension (see SessionState._extensions) holding the first compact message rewritten
# after it arrived.
_REWRITTEN = "rewritten"
# The extension holding what the session knows of its shell's folder (see ShellFolders).
_SHELL_FOLDERS = "shell_folders"


class SessionState(forks.Guarded):
    """A session's attributes, its options and then the state an append may change (listed
    here and nowhere else), and how that state is changed all or nothing, saved, restored and
    stored."""

    filter_when: Literal["arrival", "answered"]
    supersede_batch: int | None
    _model: str | None
    # Whether the session was given its own counter (a changed model then keeps it).
    _own_counter: bool
    counter: TokenCounter
    store: ArtifactStore
    retrieve_tool: bool
    filter: ToolOutputFilter | None
    pipeline: Stage | None
    guard: ArrivalGuard
    provider: Provider
    window: WindowPolicy | None
    tools_on_demand: bool
    # None: repeated tool-output lines are sent as they are (dedupe_outputs=False).
    repeats: RepeatedLines | None
    window_state: WindowState
    session_id: str | None
    _raw: list[Message]
    _compact: list[Message]
    _ids: set[str]
    _calls: dict[str, Call]
    _records: dict[RecordKey, FilterRecord]
    _decisions: list[Decision]
    _pending: list[int]
    _views: list[tuple[int, FileRegion]]
    _superseded: list[tuple[int, int]]
    _full_tools: list[Mapping[str, Any]]
    _extensions: dict[str, Any]
    _found: Fingerprints
    _own_key: bytes
    _later: LaterValues
    _backing: Backing | None

    def _choose_model(self, model: str | None, counter: CounterLike | None) -> None:
        """The model the requests go to, and the counter: ``counter``, else the model's."""
        self._own_counter = counter is not None
        self.counter = get_counter(model, counter)
        self._model = model

    @property
    def model(self) -> str | None:
        """The model the requests go to. Set it to send the next requests to another: the
        session then counts with that model's counter (unless it was given its own
        ``counter``), and the next render records the prompt-cache rewrite (a ``warned``
        decision, ``stage="cache"``).

        Raises:
            ConfigError: on setting, ``model`` is not a string or ``None``.
        """
        return self._model

    @model.setter
    def model(self, model: str | None) -> None:
        switch = self._model_switch(model)
        with self._lock:  # a render in another thread counts with one counter throughout
            self._switch_model(switch)

    def _model_switch(self, model: Any) -> tuple[TokenCounter, str | None]:
        """The counter and model that setting :attr:`model` to ``model`` leaves, checked
        (``ConfigError`` naming ``model``, a counter given or not), warning when the window
        passes the model's; for the caller to apply. Called by a ``model`` setter."""
        model = optional_text(model, "model")
        # A counter given is kept, and never changes: read without the lock.
        counter = self.counter if self._own_counter else get_counter(model)
        _warn_if_beyond_the_model(self.window, model, stacklevel=4)  # the setter's caller
        return counter, model

    def _switch_model(self, switch: tuple[TokenCounter, str | None]) -> None:
        """Apply what :meth:`_model_switch` returned, no render being under way."""
        self.counter, self._model = switch

    def _start_empty(self) -> None:
        """The state of a session with no message yet, held in this process."""
        self._raw = []
        self._compact = []
        self._ids = set()
        self._calls = {}
        self._records = {}
        self._decisions = []
        self._pending = []  # tool outputs awaiting the agent's answer (positions)
        # The provider the messages came from: "anthropic" once an Anthropic message arrives.
        self.provider = "openai"
        self._views = []  # live file views: (position, region)
        self._superseded = []  # (position, by position), not yet applied
        self._full_tools = []  # the last full definitions rendered
        # JSON state that other features keep per session, by feature name: saved with every
        # append of a stored session and restored with it (see _state()).
        self._extensions = {}
        # The secret values found in tool outputs, as keyed fingerprints, to redact a value
        # wherever it reappears alone (echo $DB_PASSWORD); see _hunt for a stored session's key.
        self._found = Fingerprints()
        self._own_key = secrets.token_bytes(32)
        # Names this session in memory in the results it renders (see _origin): never stored.
        self._memory_key = secrets.token_hex(8)
        # What is sent, hunted again for values found after a message arrived (a cache).
        self._later = LaterValues()
        # One lock for every read and write of the state above: a Session is shared by threads.
        # A fork waits for a call in another thread to end (see forks.Guarded).
        self._guard_state()
        self._backing = None
        self.session_id = None

    def _how_to_reopen(self) -> str:
        """What to do in another process instead of using this object there."""
        if self._backing is None:
            return (
                "a session in memory is its process's: make one there, or open it on a "
                "session store, to share it, with Session.open(session_id, store=url)"
            )
        return (
            f"pass its id and its store's URL, and open it there: "
            f"Session.open({self._backing.session_id!r}, store=url)"
        )

    def _change(self, change: Callable[[], None], retry: tuple[Any, ...] | None = None) -> None:
        """Make ``change`` to the session's state, all or nothing; a stored session writes it
        to its store before returning (applying it again on top of other writers' appends
        when they came first, so ``change`` must read the state it changes, not capture it).
        Every change of state goes through here: appends, and any feature's own. ``retry``:
        the call's name and arguments, for a retry of a write the store took unacknowledged
        to be let through (see ``_internal/lost_replies.py``)."""
        with self._lock:
            if self._backing is None:
                self._transact(change)
            else:
                self._backing.commit(self, lambda: self._transact(change), retry)

    def _transact(self, change: Callable[[], None]) -> Snapshot:
        """Apply ``change``; on any failure the session goes back to how it was. Returns the
        state before, for the store to save what changed."""
        before = self._snapshot()
        try:
            change()
        except BaseException:
            self._restore(before)
            raise
        return before

    def _origin(self) -> tuple[str, str]:
        """The session, and the life of it, a render is made from: a stored session's id and
        its life (the store's ``append(life=...)``, renewed by an erasure or an expiry), so
        that every replica reads one render alike; a session in memory, which nothing erases,
        is itself."""
        if isinstance(self.store, SessionArtifacts):
            return f"stored:{self.session_id}", self.store.life()
        return f"memory:{self._memory_key}", ""

    def _answering(self, after: object, change: Callable[[], None]) -> Callable[[], None]:
        """``change`` (an append's), as answering the render ``after`` (``append(after=)``):
        ``after`` is checked now, ``None`` or a result this session rendered (a ``ConfigError``
        naming ``after`` otherwise); the change refuses to run when the session left the life
        that render was made in, checked once the store was read (so that an erasure read on
        the way is seen), on each attempt."""
        if after is None:
            return change
        if not isinstance(after, PackResult):
            raise ConfigError(
                "after must be the PackResult of this session's render() that the message "
                f"answers, or None; got {type(after).__name__}"
            )
        origin = origin_of(after)
        if origin is None or origin[0] != self._origin()[0]:
            made = "by pack()" if origin is None else "by another session"
            raise ConfigError(
                f"after: the result was rendered {made}, not by this session; give the result "
                "of this session's render() that the message answers"
            )

        def answering() -> None:
            if origin != self._origin():
                store = self.store
                url = store.store.url if isinstance(store, SessionArtifacts) else "memory"
                raise SessionErasedError(url=url, session_id=str(self.session_id))
            change()

        return answering

    def _hunt(self) -> BoundFingerprints:
        """The secret values found so far, under the session's key, for the guard."""
        key = self._own_key
        if isinstance(self.store, SessionArtifacts):
            # A stored session's (an async one's too, whose core has no backing): derived from
            # the secret its first writer drew, which every replica reads and an erasure
            # renews; not that secret itself, which keys the originals' ids.
            secret = bytes.fromhex(self.store.secret)
            key = hmac.new(secret, b"ctxpack secret values found", hashlib.sha256).digest()
        return self._found.bound(key)

    def _rewrote(self, position: int) -> None:
        """Note that the compact message at ``position`` changed after it arrived (an output
        filtered once answered, a file view superseded): the requests sent before held it as
        it was, so on a model with preserved thinking the later turns' thinking fails."""
        first = self._first_rewritten()
        if first is None or position < first:
            self._extensions[_REWRITTEN] = position

    def _first_rewritten(self) -> int | None:
        """The first position :meth:`_rewrote` noted, if any."""
        first = self._extensions.get(_REWRITTEN)
        return first if isinstance(first, int) else None

    def _refresh(self) -> None:
        """Read what other writers appended to a stored session (nothing for one in memory)."""
        if self._backing is not None:
            self._backing.sync(self)

    def _note_calls(self, msg: Message) -> None:
        """Note the calls ``msg`` makes, and what a tool output says of the shell's folder."""
        shells = self._shell_folders()
        answered = self._calls.get(msg.tool_call_id or "") if msg.role == "tool" else None
        if answered is not None and answered.pwd_within is not None:
            shells.learn(answered.pwd_within, msg.text)
        for call in msg.tool_calls or ():
            args = call_arguments(call.function.arguments)
            region = shells.place(region_of_call(call.function.name, args))
            self._calls[call.id] = Call(
                tool=call.function.name,
                command=command_of(call.function.arguments),
                # A reasoning model often calls without a word: its reasoning's summary says
                # what it is after, closer to the call than the user's question.
                goal=msg.text or summary_text(msg.content),
                region=region,
                pwd_within=shells.ran(args),
            )
        if shells.state:
            self._extensions[_SHELL_FOLDERS] = shells.state

    def _shell_folders(self) -> ShellFolders:
        """Where the shell views' relative paths lead (its state is the session's)."""
        return ShellFolders(self._extensions.get(_SHELL_FOLDERS, {}))

    def _raw_total(self) -> int:
        """The tokens of the transcript as one prompt (the reply priming and every message)."""
        # The transcript's messages never change: counted by their identity (message_sizes),
        # not again at every render through the counter's text cache, which a long session's
        # outputs outgrow. An oversized output is not counted at all.
        estimated = {
            r.message_id: r.tokens_before for r in self._records.values() if r.kind == "oversized"
        }
        if not estimated:
            return REPLY_PRIMING + sum(message_sizes(self.counter, self._raw))
        counted = [m for m in self._raw if m.id not in estimated]
        return (
            REPLY_PRIMING
            + sum(message_sizes(self.counter, counted))
            + sum(estimated[m.id] for m in self._raw if m.id in estimated)
        )

    # ----------------------------------------------------------------------- persisted state
    # Everything an append may change is saved, restored and stored here, and nowhere else. A
    # feature with its own per-session state keeps it JSON-serialisable in
    # self._extensions[name]: it is then rolled back with a failed append and written to the
    # store with every successful one.

    def _snapshot(self) -> Snapshot:
        return Snapshot(
            raw=len(self._raw),
            decisions=len(self._decisions),
            compact=list(self._compact),
            calls=dict(self._calls),
            records=dict(self._records),
            pending=list(self._pending),
            views=list(self._views),
            superseded=list(self._superseded),
            provider=self.provider,
            extensions=copy.deepcopy(self._extensions),
            window_state=self.window_state._copy(),
            full_tools=list(self._full_tools),
            found=len(self._found),
        )

    def _restore(self, snapshot: Snapshot) -> None:
        del self._raw[snapshot.raw :]
        # Rebuilt, not patched: an append that failed half-way may have reserved an id for a
        # message it never added.
        self._ids = {m.id for m in self._raw}
        del self._decisions[snapshot.decisions :]
        self._compact = list(snapshot.compact)
        self._calls = dict(snapshot.calls)
        self._records = dict(snapshot.records)
        self._pending = list(snapshot.pending)
        self._views = list(snapshot.views)
        self._superseded = list(snapshot.superseded)
        self.provider = snapshot.provider
        self._extensions = copy.deepcopy(snapshot.extensions)
        self.window_state = snapshot.window_state._copy()
        self._full_tools = list(snapshot.full_tools)
        self._found.truncate(snapshot.found)

    def _forget_texts(self) -> None:
        """Drop what this object keeps of the session's texts between calls beside its state
        (the last request's tool outputs, the record as hunted for secret values): after an
        erasure, so that the erased life's texts do not stay in memory until the next render."""
        if self.repeats is not None:
            self.repeats = RepeatedLines()
        self._later = LaterValues()

    def _entry_since(self, snapshot: Snapshot, *, whole_window: bool = False) -> dict[str, Any]:
        """What changed since ``snapshot``, as JSON: the store's entry for one append. With
        ``whole_window``, the entry carries the managed mode's growing lists whole (for the
        first entry of a session, or the first on top of a session stored before entries
        carried them), not what they gained."""
        new = self._raw[snapshot.raw :]
        # A compact message that differs from the one before (or, new, from the raw one), and a
        # record that is not the one before: compared by identity in C, a long session's
        # unchanged history being most of what is compared.
        was = [*snapshot.compact, *new]
        changed = compress(count(), map(operator.is_not, self._compact, was))
        compact = {str(p): encode_message(self._compact[p], p) for p in changed}
        records = self._records.values()
        fresh = compress(
            records, map(operator.is_not, records, map(snapshot.records.get, self._records))
        )
        entry: dict[str, Any] = {
            "messages": [encode_message(m, snapshot.raw + i) for i, m in enumerate(new)],
            "compact": compact,
            "records": [encoded_record(r) for r in fresh],
            "decisions": [
                d.model_dump(exclude_none=True) for d in self._decisions[snapshot.decisions :]
            ],
        }
        if len(self._found) > snapshot.found:
            # Fingerprints, never the values: what this append found, for the replicas.
            entry["secrets"] = self._found.since(snapshot.found)
        if self.window is not None:
            # The managed mode's lists grow with every edit: each entry holds what it adds, so
            # that what an append writes does not grow with the session (the rest of the
            # window's state is in _state()).
            before = WindowState() if whole_window else snapshot.window_state
            grown = self.window_state._grown_since(before)
            if whole_window:
                # Whole: a reader drops the lists it holds (its own window_state=, or what a
                # format-1 state gave it) for these.
                entry["window"] = {"whole": True, **grown}
            elif grown:
                entry["window"] = grown
        return entry

    def _apply_entry(self, entry: Mapping[str, Any]) -> None:
        """Apply an entry another writer (or an earlier process) stored."""
        for data in entry["messages"]:
            msg = decode_message(data)
            self._raw.append(msg)
            self._compact.append(msg)
            self._ids.add(msg.id)
            self._note_calls(msg)
        for position, data in entry["compact"].items():
            self._compact[int(position)] = decode_message(data)
        for data in entry["records"]:
            record = FilterRecord(**data)
            self._records[record_key(record)] = record
        self._decisions.extend(Decision(**data) for data in entry["decisions"])
        self._found.grow(entry.get("secrets", ()))
        if self.window is not None and "window" in entry:
            self.window_state._grow(entry["window"])

    def _state(self) -> dict[str, Any]:
        """The session's bookkeeping beside its messages, as JSON."""
        state: dict[str, Any] = {
            "provider": self.provider,
            "pending": self._pending,
            # A region's `within` only when it has one: a replica of the release before reads
            # the rest.
            "views": [
                [position, *(region if region.within else region[:4])]
                for position, region in self._views
            ],
            "superseded": self._superseded,
            "extensions": self._extensions,
        }
        if self.window is not None:
            # Only a managed session's: another one's (its cache-bust fingerprint) stays with
            # the process that rendered.
            # Its lists that grow with the session are in the entries (_entry_since).
            state["window"] = self.window_state._lasting()
        if self.tools_on_demand:
            # For describe_tool to answer on a replica that did not render them.
            state["full_tools"] = self._full_tools
        return state

    def _set_state(self, state: Mapping[str, Any], layout: int) -> None:
        """Read back what :meth:`_state` wrote, in the store's ``layout`` (its format): before
        format 2, the window's state was whole in it, not partly in the entries."""
        self.provider = state["provider"]
        self._pending = list(state["pending"])
        # A view stored before regions had a basis has 4 fields, one without `within` 5:
        # FileRegion's defaults fill them.
        self._views = [(p, FileRegion(*region)) for p, *region in state["views"]]
        self._superseded = [(p, by) for p, by in state["superseded"]]
        self._extensions = dict(state["extensions"])
        if self.window is not None and "window" in state:
            if layout < 2:
                self.window_state = WindowState.model_validate(state["window"])
            else:
                self.window_state = self.window_state._with_lasting(state["window"])
        if self.tools_on_demand and "full_tools" in state:
            self._full_tools = list(state["full_tools"])
