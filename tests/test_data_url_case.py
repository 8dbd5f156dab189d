"""A data URL's ``data:`` scheme and ``;base64`` mark are read in any case, as URL schemes and
MIME tokens are (RFC 3986, RFC 2045) and as browsers read them: its base64 is checked, it
goes to Anthropic as an image, its size is read, as a lower-case one's are."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ctxpack
from ctxpack import InvalidMessageError, Message
from ctxpack.adapters import to_anthropic

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAU8hG80AAAAASUVORK5CYII="
)


@pytest.mark.parametrize(
    "url",
    [
        "DATA:image/png;BASE64,iVBO%20w0K!",
        "Data:image/png;Base64,iVBO%20w0K!",
        "data:image/png;BASE64,iVBO%20w0K!",
    ],
)
def test_an_upper_case_data_url_s_base64_is_checked(url: str) -> None:
    part = {"type": "image_url", "image_url": {"url": url}}
    with pytest.raises(InvalidMessageError, match="valid base64") as caught:
        Message(role="user", content=[part])
    assert caught.value.field == "content[0].image_url.url"
    history = [{"role": "user", "content": "hi"}, {"role": "user", "content": [part]}]
    with pytest.raises(InvalidMessageError, match="valid base64") as caught:
        ctxpack.pack(history, budget=50_000, model="gpt-4o")
    assert (caught.value.index, caught.value.field) == (1, "content[0].image_url.url")
    file = {"type": "file", "file": {"filename": "a.pdf", "file_data": url}}
    with pytest.raises(InvalidMessageError, match="valid base64"):
        Message(role="user", content=[file])


def test_an_upper_case_data_url_image_goes_to_anthropic_as_a_lower_case_one_does() -> None:
    blocks = []
    for head in ("data:image/png;base64,", "DATA:IMAGE/PNG;BASE64,"):
        part = {"type": "image_url", "image_url": {"url": head + _PNG}}
        sent = to_anthropic([{"role": "user", "content": [part]}])
        blocks.append(sent["messages"][0]["content"][0])
    assert blocks[0] == blocks[1]
    assert blocks[0]["source"] == {"type": "base64", "media_type": "image/png", "data": _PNG}
    counts = [
        ctxpack.count_tokens(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": h + _PNG}}]}],
            model="gpt-4o",
        )
        for h in ("data:image/png;base64,", "DATA:image/png;BASE64,")
    ]
    assert counts[0] == counts[1]


def test_an_upper_case_data_url_text_file_is_redacted() -> None:
    # Read as a lower-case one is, a secret in it went to the model as it came.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    text = f"token = {token}"
    data = "DATA:text/plain;BASE64," + base64.b64encode(text.encode()).decode()
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Read the settings."},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_file", "filename": "settings", "file_data": data}],
        },
    ]
    sent = ctxpack.pack(items, budget=50_000, counter="approx").to_openai(api="responses")
    head, _, payload = sent[-1]["output"][0]["file_data"].partition(",")
    assert head == "DATA:text/plain;BASE64"
    assert base64.b64decode(payload).decode() == "token = [REDACTED github-pat]"
