"""What a session does to a message the moment it arrives, before it keeps or reads it.

Secrets are replaced (:mod:`ctxpack.redaction`) before the message is stored, filtered or
rendered, so the raw value reaches neither the model nor the artifact store; prompt-injection
markers are flagged (:mod:`ctxpack.injection`), and the message quarantined if the caller
asked. :class:`ctxpack.Session` runs an :class:`ArrivalGuard` on every message it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ._internal.arguments import shown
from ._internal.part_texts import is_provider_tool_result, with_texts
from ._internal.secret_values import Hunt
from .errors import ConfigError
from .injection import find_injections, injection_reason, quarantined, result_injections
from .limits import MAX_MESSAGE_CHARS, message_chars
from .messages import Message, Role
from .pipeline import Decision
from .redaction import redact_for_roles, secrets_reason
from .store import ArtifactStore, put_original
from .tokens import TokenCounter, count_tokens_approx

__all__ = [
    "ArrivalGuard",
]

_ALL_ROLES: tuple[Role, ...] = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class Arrival:
    """A message as the session keeps it, after the guard.

    Attributes:
        message: The message with its secrets replaced (the one the transcript keeps).
        quarantined: What the compact record holds instead, when the message was quarantined.
        decisions: The ``redacted`` and ``flagged`` decisions about it.
        stored: The artifact id of a quarantined message's text.
    """

    message: Message
    quarantined: Message | None = None
    decisions: tuple[Decision, ...] = field(default=())
    stored: str | None = None


@dataclass(frozen=True)
class ArrivalGuard:
    """The session's guard: which messages are redacted and flagged, and how.

    Args:
        redact_secrets: ``True``: tool outputs (and the results of tools a provider ran, inside
            an assistant's turn); ``"all"``: every message, what users typed
            included; ``False``: none.
        store_secrets: Also put the original, secrets and all, in the artifact store (its id is
            in the ``redacted`` decision). Dangerous: anyone who can read the store can read
            the secrets. Retrieve answers are redacted all the same.
        flag_injections: ``True``: flag tool outputs holding injection markers (and the
            results of tools a provider ran, inside an assistant's turn); ``"quarantine"``:
            also withhold their text from the compact record (the transcript and the store keep
            it); ``False``: do neither.
    """

    redact_secrets: bool | Literal["all"] = True
    store_secrets: bool = False
    flag_injections: bool | Literal["quarantine"] = True

    def __post_init__(self) -> None:
        # Compared by kind, not by ==: 0 and 1 equal False and True.
        if not (isinstance(self.redact_secrets, bool) or self.redact_secrets == "all"):
            raise ConfigError(
                f"redact_secrets must be True (tool outputs), 'all' (every message) or False, "
                f"got {shown(self.redact_secrets)}"
            )
        if not isinstance(self.store_secrets, bool):
            got = shown(self.store_secrets)
            raise ConfigError(f"store_secrets must be True or False, got {got}")
        if not (isinstance(self.flag_injections, bool) or self.flag_injections == "quarantine"):
            raise ConfigError(
                "flag_injections must be True, 'quarantine' or False, got "
                + shown(self.flag_injections)
            )

    @property
    def redacted_roles(self) -> Sequence[Role]:
        """The roles whose messages are redacted."""
        if self.redact_secrets == "all":
            return _ALL_ROLES
        return ("tool",) if self.redact_secrets else ()

    def __call__(
        self,
        message: Message,
        counter: TokenCounter,
        store: ArtifactStore,
        hunt: Hunt | None = None,
    ) -> Arrival:
        """Guard one arriving message (its id already set); with ``hunt`` (the session's
        memory of the secret values it found), a value found earlier is redacted wherever it
        stands alone in what is redacted, and the values found are added to it."""
        if not isinstance(message, Message):
            raise ConfigError(
                f"message must be a Message (ensure_messages() converts dicts), got "
                f"{type(message).__name__}"
            )
        if message_chars(message) > MAX_MESSAGE_CHARS:
            # Counting a message this size whole would take many times its size in memory.
            counter = count_tokens_approx()
        decisions: list[Decision] = []
        if self.redact_secrets:
            clean, found = redact_for_roles(message, self.redacted_roles, hunt)
            if found:
                reason = secrets_reason(found)
                if self.store_secrets:
                    raw = put_original(
                        store, message.text, message_id=message.id, kind="unredacted"
                    )
                    reason += f"; the original with its secrets is in the store as {raw}"
                decisions.append(
                    Decision(
                        stage="redact",
                        action="redacted",
                        message_id=message.id,
                        reason=reason,
                        tokens_before=counter.count_message(message),
                        tokens_after=counter.count_message(clean),
                    )
                )
                message = clean
        withheld, stored = None, None
        # A tool message's text, and the results of the tools a provider ran (a web fetch's
        # page is where an injection most often comes from), as redaction reads them.
        markers = result_injections(message) if self.flag_injections else ()
        if markers:
            reason = injection_reason(markers)
            if self.flag_injections == "quarantine":
                withheld = quarantined(message, markers)
                # The session's transcript keeps the whole turn; the store, the text withheld.
                text = message.text if message.role == "tool" else _results_text(message)
                stored = put_original(store, text, message_id=message.id, kind="quarantined")
                reason += f"; quarantined: the compact record holds a note, original {stored}"
            decisions.append(
                Decision(
                    stage="flag",
                    action="flagged",
                    message_id=message.id,
                    reason=reason,
                    tokens_before=counter.count_message(message),
                    tokens_after=counter.count_message(withheld or message),
                )
            )
        return Arrival(message, withheld, tuple(decisions), stored)


def _results_text(message: Message) -> str:
    """The texts of the results of the tools a provider ran in ``message`` that hold an
    injection marker, one after the other: what a quarantine withholds from its turn."""
    texts: list[str] = []

    def take(text: str) -> str:
        if find_injections(text):
            texts.append(text)
        return text

    for part in message.content if isinstance(message.content, list) else ():
        if is_provider_tool_result(part):
            with_texts(part, take)
    return "\n\n".join(texts)
