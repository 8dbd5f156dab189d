"""Redact: replace the secrets in messages by placeholders naming their kind."""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar

from .._internal.prefix import PrefixMemo
from .._internal.secret_values import KnownValues
from ..caches import register
from ..messages import Message, Role
from ..pipeline import Decision, PackContext, check_context
from ..redaction import SecretFinding, redact_for_roles, secrets_reason
from ._base import StageModel

__all__ = ["SecretRedactor"]

_Redacted = tuple[Message, tuple[SecretFinding, ...], tuple[tuple[str, str], ...]] | None


@lru_cache(maxsize=32)
def _redactions(roles: frozenset[str]) -> PrefixMemo[Message, _Redacted]:
    """Each message redacted (``None`` when nothing is), with the secret values found in it
    (those worth hunting elsewhere), memoised across packs of a growing history: a long
    history is packed again every turn, its messages unchanged."""

    def redacted(message: Message) -> _Redacted:
        values = KnownValues()
        new, found = redact_for_roles(message, roles, values)
        return (new, found, tuple(values.values.items())) if found else None

    return PrefixMemo(redacted)


# Keyed by the values themselves: the memo of a history packed every turn, which holds them
# already (its messages are its keys), is reused while the history finds no new one.
@lru_cache(maxsize=8)
def _hunts(
    roles: frozenset[str], values: tuple[tuple[str, str], ...]
) -> PrefixMemo[Message, _Redacted]:
    """Each message redacted, the ``values`` found anywhere in the history hunted in it."""

    def redacted(message: Message) -> _Redacted:
        new, found = redact_for_roles(message, roles, KnownValues(dict(values)))
        return (new, found, ()) if found else None

    return PrefixMemo(redacted)


# Its keys hold the secret values themselves: cleared with the other caches (an erasure that
# must reach memory clears them all).
register(_hunts)


class SecretRedactor(StageModel):
    """Replace each secret (a provider key, a token, a private key, a password in a
    configuration line...) by ``[REDACTED kind]``, before any other stage reads the message.

    Secrets are found by :mod:`ctxpack.redaction` (gitleaks' rules and four of ctxpack's own).
    A value found in one message is replaced wherever else it stands alone in the messages
    redacted, before or after it (``echo $DB_PASSWORD`` printing what ``cat .env`` showed
    assigned), unless it is shorter than 8 characters or made of words.
    Each message changed gets a ``redacted`` decision naming the kinds of secret, never a value.
    The original is not kept as an artifact: it would hand the secret back.

    Args:
        roles: Whose messages are redacted. By default tool outputs only: what a user typed is
            left as typed unless their role is listed. With ``"tool"`` listed, the results of
            tools a provider ran inside an assistant's turn are redacted too.

    Example:
        >>> from ctxpack import Message, pack
        >>> from ctxpack.pipeline import PackContext
        >>> from ctxpack.tokens import get_counter
        >>> ctx = PackContext(
        ...     messages=(Message(role="tool", id="t1", tool_call_id="c1",
        ...                       content="npm_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"),),
        ...     budget=100, counter=get_counter(None, "approx"))
        >>> out = SecretRedactor()(ctx)
        >>> out.messages[0].content, out.decisions[0].reason
        ('[REDACTED npm-access-token]', '1 secret replaced: npm-access-token')
    """

    name: ClassVar[str] = "redact"

    roles: tuple[Role, ...] = ("tool",)

    def __call__(self, ctx: PackContext, /) -> PackContext:
        check_context(ctx, self)
        roles = frozenset(self.roles)
        results = _redactions(roles)(ctx.messages)
        # A value found in one message is a secret wherever it stands alone in the others,
        # earlier ones too: the model is sent the whole history at once.
        values = dict(pair for result in results if result is not None for pair in result[2])
        if values:
            results = _hunts(roles, tuple(sorted(values.items())))(ctx.messages)
        changed = [i for i, result in enumerate(results) if result is not None]
        if not changed:
            return ctx
        messages = list(ctx.messages)
        decisions = []
        for i in changed:
            result = results[i]
            assert result is not None  # changed lists only those
            msg, (new, found, _) = messages[i], result
            messages[i] = new
            decisions.append(
                Decision(
                    stage=self.name,
                    action="redacted",
                    message_id=msg.id,
                    reason=secrets_reason(found),
                    tokens_before=ctx.tokens(msg),
                    tokens_after=ctx.tokens(new),
                )
            )
        return ctx.decide(*decisions, messages=tuple(messages))
