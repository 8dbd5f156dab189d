"""Redact: replace the secrets in messages by placeholders naming their kind."""

from __future__ import annotations

from typing import ClassVar

from ..messages import Role
from ..pipeline import Decision, PackContext
from ..redaction import redact_message, secrets_reason
from ._base import StageModel

__all__ = ["SecretRedactor"]


class SecretRedactor(StageModel):
    """Replace each secret (a provider key, a token, a private key, a password in a
    configuration line...) by ``[REDACTED kind]``, before any other stage reads the message.

    Secrets are found by :mod:`ctxpack.redaction` (gitleaks' rules and three of ctxpack's own).
    Each message changed gets a ``redacted`` decision naming the kinds of secret, never a value.
    The original is not kept as an artifact: it would hand the secret back.

    Args:
        roles: Whose messages are redacted. By default tool outputs only: what a user typed is
            left as typed unless their role is listed.

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
        messages = list(ctx.messages)
        decisions = []
        for i, msg in enumerate(messages):
            if msg.role not in self.roles:
                continue
            new, found = redact_message(msg)
            if not found:
                continue
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
        if not decisions:
            return ctx
        return ctx.decide(*decisions, messages=tuple(messages))
