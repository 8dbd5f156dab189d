"""A provider's token cut by the harness that shortened a tool output: each agent writes its
own note where it cut (SWE-agent's and OpenHands' ``<response clipped>``, OpenHands'
``[... Observation truncated due to length ...]``, Codex's ``…N tokens truncated…``, a Claude
Code style ``... [N lines truncated] ...``). The part before the note and the part after it
are each too short for the token's rule; both are replaced in what a Session sends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import Session
from ctxpack.redaction import redact

GITHUB_TOKEN = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
HEAD, TAIL = GITHUB_TOKEN[:22], GITHUB_TOKEN[-12:]

# The notes as each harness writes them (see ctxpack/_internal/secret_rules.py for where).
SWE_AGENT_EDITOR = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order "
    "to find the line numbers of what you are looking for.</NOTE>"
)
SWE_AGENT_OBSERVATION = (
    "<response clipped><NOTE>Observations should not exceeded 100000 characters. 5210 "
    "characters were elided. Please try a different command that produces less output or use "
    "head/tail/grep/redirect the output to a file. Do not use interactive pagers.</NOTE>"
)
OPENHANDS_SDK = (
    "<response clipped><NOTE>Due to the max output limit, only part of the full response has "
    "been shown to you.</NOTE>"
)
OPENHANDS = "\n[... Observation truncated due to length ...]\n"
CODEX_TOKENS = "…5210 tokens truncated…"
CODEX_BYTES = "\n[... output truncated to fit 10240 bytes ...]\n\n"
LINES_TRUNCATED = "\n\n... [638 lines truncated] ...\n\n"


def _sent(output: str) -> str:
    args = json.dumps({"command": "git push"})
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": args}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Why does the push fail?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": output},
    ]
    session = Session(model="gpt-4o", filters=False)
    session.extend(history)
    return json.dumps(session.render().to_openai(), ensure_ascii=False)


@pytest.mark.parametrize(
    "note",
    [SWE_AGENT_EDITOR, SWE_AGENT_OBSERVATION, LINES_TRUNCATED, "\n[truncated]", " (truncated)"],
    ids=["swe-agent editor", "swe-agent observation", "lines truncated", "bracket", "parens"],
)
def test_a_token_cut_before_a_harness_note_is_replaced(note: str) -> None:
    sent = _sent(f"remote: invalid credentials {HEAD}{note}")
    assert HEAD[4:] not in sent, sent
    assert "[REDACTED cut-token]" in sent


@pytest.mark.parametrize(
    "note",
    [SWE_AGENT_EDITOR, OPENHANDS_SDK, OPENHANDS, CODEX_TOKENS, CODEX_BYTES, LINES_TRUNCATED],
    ids=["swe-agent editor", "openhands sdk", "openhands", "codex tokens", "codex bytes", "lines"],
)
def test_a_token_cut_in_the_middle_by_a_harness_is_replaced_on_both_sides(note: str) -> None:
    # The harness keeps the head and the tail of the output, its note between them.
    sent = _sent(f"remote: invalid credentials {HEAD}{note}{TAIL}\nfatal: exit 128\n")
    assert HEAD[4:] not in sent and TAIL not in sent, sent
    assert "fatal: exit 128" in sent


@pytest.mark.parametrize(
    "text",
    [
        # A note of the harness after an ordinary word, and after a name that begins as a
        # token does.
        f"building docs{LINES_TRUNCATED}done\n",
        f"$ pip show ghp_import{OPENHANDS}Version: 2.1.0\n",
        f"npm_config_cache=/tmp/npm{CODEX_BYTES}npm_lifecycle_event=build\n",
        # A token's prefix and four characters in prose, then a note that is no cut.
        "Tokens look like ghp_ABCD (see the docs) and are rotated monthly\n",
        "ghp_Ab12 [done]\n",
    ],
)
def test_notes_of_a_harness_without_a_cut_token_are_left(text: str) -> None:
    assert redact(text).text == text
