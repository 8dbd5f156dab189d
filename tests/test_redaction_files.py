"""A text file a tool returns as base64 data is redacted, whatever text type names it, and so
is its file name: the model reads both."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ctxpack import pack

TOKEN = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"


def _sent_file(file: dict[str, Any]) -> dict[str, Any]:
    """The file part a Responses API function_call_output holding ``file`` is sent as."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "Read the settings."},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [file]},
    ]
    sent = pack(items, budget=50_000, counter="approx").to_openai(api="responses")
    part: dict[str, Any] = sent[-1]["output"][0]
    return part


@pytest.mark.parametrize(
    "media",
    [
        "text/plain",
        "application/json",
        "application/x-yaml",
        "application/yaml",
        "application/xml",
        "application/ld+json",
        "application/x-sh",
        "application/toml",
    ],
)
def test_a_text_file_of_any_text_type_is_redacted(media: str) -> None:
    text = json.dumps({"token": TOKEN, "region": "eu-west-1"})
    data = f"data:{media};base64," + base64.b64encode(text.encode()).decode()
    sent = _sent_file({"type": "input_file", "filename": "settings", "file_data": data})
    head, _, payload = sent["file_data"].partition(",")
    assert head == f"data:{media};base64"
    assert base64.b64decode(payload).decode() == text.replace(TOKEN, "[REDACTED github-pat]")


def test_a_binary_files_data_is_sent_as_it_came() -> None:
    # A PDF may be ASCII throughout; its text is not a text file's.
    data = "data:application/pdf;base64," + base64.b64encode(f"%PDF-1.4 {TOKEN}".encode()).decode()
    file = {"type": "input_file", "filename": "report.pdf", "file_data": data}
    assert _sent_file(file) == file


def test_a_files_name_is_redacted() -> None:
    data = "data:text/plain;base64," + base64.b64encode(b"hello").decode()
    sent = _sent_file({"type": "input_file", "filename": f"{TOKEN}.txt", "file_data": data})
    assert sent["filename"] == "[REDACTED github-pat].txt"
