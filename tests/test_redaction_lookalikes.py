"""Secrets a model reads where the rules read something else: a character nobody sees inside
the secret or its name (a zero-width space or joiner, the word joiner, a byte order mark, a
soft hyphen), and letters and digits written in their full-width or mathematical forms
(``ｇｈｐ＿...``, ``𝐠𝐡𝐩_...``), which a model reads as the letters they stand for. Each is
checked in what a Session sends the model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import Session
from ctxpack.redaction import redact

GITHUB_TOKEN = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
PASSWORD = "Vq8nT2zLp4Rw"
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


def _exchange(i: int, output: str, command: str = "cat config") -> list[dict[str, Any]]:
    args = json.dumps({"command": command})
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": args}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": output},
    ]


def _sent(*outputs: str) -> str:
    """What a Session sends the model after the tool outputs, as JSON that keeps every
    character as it is (escaped, a full-width letter would never match)."""
    session = Session(model="gpt-4o", filters=False)
    session.append({"role": "user", "content": "Why does the deploy fail?"})
    for i, output in enumerate(outputs):
        session.extend(_exchange(i, output))
    return json.dumps(session.render().to_openai(), ensure_ascii=False)


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _bold(text: str) -> str:
    # MATHEMATICAL BOLD letters and digits, which NFKC reads as ASCII ones.
    def one(c: str) -> str:
        if c.isupper():
            return chr(0x1D400 + ord(c) - ord("A"))
        if c.islower():
            return chr(0x1D41A + ord(c) - ord("a"))
        if c.isdigit():
            return chr(0x1D7CE + ord(c) - ord("0"))
        return c

    return "".join(map(one, text))


@pytest.mark.parametrize("mark", INVISIBLE, ids=["zwsp", "zwnj", "zwj", "wj", "bom", "shy"])
def test_a_token_split_by_an_invisible_character_is_replaced_whole(mark: str) -> None:
    hidden = GITHUB_TOKEN[:12] + mark + GITHUB_TOKEN[12:]
    sent = _sent(f"remote: using {hidden} to push\n")
    assert GITHUB_TOKEN[12:] not in sent and GITHUB_TOKEN[4:12] not in sent, sent
    assert "remote: using [REDACTED github-pat] to push" in sent


@pytest.mark.parametrize("mark", INVISIBLE, ids=["zwsp", "zwnj", "zwj", "wj", "bom", "shy"])
def test_a_secret_whose_name_is_split_by_an_invisible_character_is_replaced(mark: str) -> None:
    sent = _sent(f"DB_PASS{mark}WORD={PASSWORD}\n")
    assert PASSWORD not in sent, sent


def test_an_invisible_character_between_every_letter_hides_nothing() -> None:
    hidden = "\u200b".join(GITHUB_TOKEN)
    out = redact(f"token: {hidden}\n")
    assert out.text == "token: [REDACTED github-pat]\n"


def test_a_value_found_earlier_is_hunted_through_invisible_characters() -> None:
    hidden = PASSWORD[:4] + "\u2060" + PASSWORD[4:]
    sent = _sent(f"DB_PASSWORD={PASSWORD}\n", f"{hidden}\n")
    assert PASSWORD[4:] not in sent, sent


@pytest.mark.parametrize(
    "written",
    [
        _full_width(GITHUB_TOKEN),
        _full_width("ghp_") + GITHUB_TOKEN[4:],
        GITHUB_TOKEN[:4] + _full_width(GITHUB_TOKEN[4:20]) + GITHUB_TOKEN[20:],
        _bold(GITHUB_TOKEN),
    ],
    ids=["full-width", "full-width prefix", "full-width middle", "mathematical bold"],
)
def test_a_token_written_in_lookalike_letters_is_replaced(written: str) -> None:
    sent = _sent(f"remote: using {written} to push\n")
    assert written not in sent and written[6:30] not in sent, sent
    assert "remote: using [REDACTED github-pat] to push" in sent


def test_a_password_assigned_in_full_width_letters_is_replaced() -> None:
    written = _full_width(f"DB_PASSWORD={PASSWORD}")
    sent = _sent(f"{written}\n")
    assert _full_width(PASSWORD) not in sent, sent


@pytest.mark.parametrize(
    "text",
    [
        # Full-width text that holds no secret: CJK prose, dates, a product code, a table.
        "２０２４年１２月７日、ＡＢＣ社のサーバー（ｗｅｂ０１）を再起動しました。\n",
        "型番：ＸＰＳ－１３　９３１０、価格：１２８，０００円\n",
        "｜ 名前 ｜ ＩＤ ｜\n｜ 田中 ｜ Ａ１２３４５６７８ ｜\n",
        "𝐓𝐡𝐞 𝐪𝐮𝐢𝐜𝐤 𝐛𝐫𝐨𝐰𝐧 𝐟𝐨𝐱 𝟏𝟐𝟑\n",
        # Zero-width joiners in emoji and in Persian text, a soft hyphen in a long word.
        "deploy 👩\u200d💻 done, cache hit 👍🏽\n",
        "می\u200cخواهم\n",
        "inter\u00adnational\u00adization\n",
    ],
)
def test_lookalike_and_invisible_characters_alone_are_left(text: str) -> None:
    assert redact(text).text == text
