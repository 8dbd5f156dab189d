"""Documents (PDFs, text files) inside messages: counted by their pages, carried across providers.

A PDF is billed as the text and a picture of each page, so counting its base64 as text made a
300 KB attachment cost 270,000 tokens and fail every budget.
"""

from __future__ import annotations

import base64
import os
import warnings
import zlib
from typing import Any

import pytest
from pydantic import TypeAdapter

import ctxpack
from ctxpack._internal.documents import PDF_PAGE_TOKENS
from ctxpack._internal.encodings import load_encoding
from ctxpack.tokens import ApproximateTokenCountWarning

O200K = load_encoding("o200k_base")  # OpenAI's file, shipped with ctxpack


def make_pdf(pages: int, *, object_stream: bool = False, padding: int = 0) -> bytes:
    """A PDF of ``pages`` blank pages; with ``object_stream``, the pages packed compressed in
    an object stream as PDF 1.5 writers do; ``padding`` bytes of noise in a content stream."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects = [
        b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n",
        f"2 0 obj << /Type /Pages /Kids [{kids}] /Count {pages} >> endobj\n".encode(),
    ]
    page_dicts = [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    if object_stream:
        packed = zlib.compress(b"\n".join(page_dicts))
        header = f"<< /Type /ObjStm /N {pages} /First 0 /Filter /FlateDecode /Length "
        objects.append(f"9 0 obj {header}{len(packed)} >>\nstream\n".encode())
        objects.append(packed + b"\nendstream\nendobj\n")
    else:
        objects += [f"{3 + i} 0 obj ".encode() + d + b" endobj\n" for i, d in enumerate(page_dicts)]
    noise = zlib.compress(os.urandom(padding)) if padding else b""
    objects.append(f"8 0 obj << /Length {len(noise)} >>\nstream\n".encode() + noise)
    objects.append(b"\nendstream\nendobj\n")
    return b"%PDF-1.5\n" + b"".join(objects) + b"trailer << /Root 1 0 R >>\n%%EOF\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def openai_file(data: bytes, name: str = "report.pdf") -> dict[str, Any]:
    url = "data:application/pdf;base64," + b64(data)
    return {"type": "file", "file": {"filename": name, "file_data": url}}


def asking(part: dict[str, Any], text: str = "Summarize it") -> list[dict[str, Any]]:
    return [{"role": "user", "content": [part, {"type": "text", "text": text}]}]


def text_only_count(text: str, name: str) -> int:
    # A user message's framing (3 + role) and the reply priming (3), the texts by o200k.
    return 3 + len(O200K.encode("user")) + len(O200K.encode(text)) + len(O200K.encode(name)) + 3


@pytest.mark.parametrize("object_stream", [False, True])
def test_a_pdf_costs_its_pages_not_its_bytes(object_stream: bool) -> None:
    pdf = make_pdf(12, object_stream=object_stream, padding=300_000)
    tokens = ctxpack.count_tokens(asking(openai_file(pdf)), model="gpt-4o")
    assert tokens == text_only_count("Summarize it", "report.pdf") + 12 * PDF_PAGE_TOKENS


def test_a_300_kb_pdf_packs_within_a_budget_it_fits() -> None:
    history = [
        {"role": "system", "content": "You answer questions about documents."},
        *asking(openai_file(make_pdf(10, padding=300_000))),
    ]
    result = ctxpack.pack(history, budget=40_000, model="gpt-4o")
    assert result.messages[1].content == history[1]["content"]
    assert 10 * PDF_PAGE_TOKENS < result.tokens <= 40_000


def test_an_anthropic_document_counts_its_pages_title_and_text() -> None:
    pdf = {
        "type": "document",
        "title": "Q3 report",
        "source": {"type": "base64", "media_type": "application/pdf", "data": b64(make_pdf(4))},
    }
    plain = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "a b c"},
    }
    counter = ctxpack.get_counter("gpt-4o")
    assert counter.count_message(ctxpack.Message(role="user", content=[pdf])) == (
        3 + counter.count("user") + counter.count("Q3 report") + 4 * PDF_PAGE_TOKENS
    )
    assert counter.count_message(ctxpack.Message(role="user", content=[plain])) == (
        3 + counter.count("user") + counter.count("a b c")
    )


def test_an_anthropic_document_of_content_blocks_counts_its_images() -> None:
    """A content source holds text and image blocks, and Claude bills each image: a 1500 x 1000
    PNG in one counted 0 tokens (the document its text alone), as much as in a message."""
    from tests.test_images import image_bytes

    data = base64.b64encode(image_bytes(1500, 1000, "png")).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    text = {"type": "text", "text": "Figure 1"}
    document = {"type": "document", "source": {"type": "content", "content": [text, image]}}
    counter = ctxpack.get_counter("claude-sonnet-4-5")
    alone = counter.count_message(ctxpack.Message(role="user", content=[text, image]))
    assert counter.count_message(ctxpack.Message(role="user", content=[document])) == alone


def test_a_text_file_sent_as_data_counts_as_its_text() -> None:
    text = "name,amount\n" + "".join(f"item {i},{i * 7}\n" for i in range(200))
    part = {
        "type": "input_file",
        "filename": "items.csv",
        "file_data": "data:text/csv;base64," + b64(text.encode()),
    }
    counter = ctxpack.get_counter("gpt-4o")
    assert counter.count_message(ctxpack.Message(role="user", content=[part])) == (
        3 + counter.count("user") + counter.count("items.csv") + counter.count(text)
    )


@pytest.mark.parametrize(
    "part",
    [
        {"type": "file", "file": {"file_id": "file-abc123"}},
        {"type": "input_file", "file_url": "https://example.com/report.pdf"},
        {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}},
    ],
    ids=["openai file id", "responses file url", "anthropic url"],
)
def test_a_file_sent_by_reference_counts_as_a_page_and_warns(part: dict[str, Any]) -> None:
    counter = ctxpack.get_counter("gpt-4o")
    with pytest.warns(ApproximateTokenCountWarning, match="only the provider knows its size"):
        tokens = counter.count_message(ctxpack.Message(role="user", content=[part]))
    assert tokens == 3 + counter.count("user") + PDF_PAGE_TOKENS


def test_data_that_is_not_a_pdf_still_costs_a_page() -> None:
    part = {
        "type": "file",
        "file": {"filename": "x.pdf", "file_data": "data:application/pdf;base64,QUJD"},
    }
    counter = ctxpack.get_counter("gpt-4o")
    # Base64 that is not a PDF (data that is not base64 is refused: see
    # test_file_data_that_is_not_base64_is_named, and a Message made without validation is
    # checked where it is counted) still costs a page.
    message = ctxpack.Message(role="user", content=[part], id="u")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tokens = counter.count_message(message)
    assert tokens == 3 + counter.count("user") + counter.count("x.pdf") + PDF_PAGE_TOKENS


def test_a_pdf_goes_from_openai_to_anthropic_and_back_whole() -> None:
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam

    data = b64(make_pdf(3))
    payload = ctxpack.to_anthropic(ctxpack.from_openai(asking(openai_file(make_pdf(3)))))
    block = payload["messages"][0]["content"][0]
    assert block == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": data},
        "title": "report.pdf",
    }
    TypeAdapter(list[MessageParam]).validate_python(payload["messages"])
    back = ctxpack.to_openai(ctxpack.from_anthropic(payload["messages"]))
    assert back[0]["content"][0] == openai_file(make_pdf(3))
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(back)


def test_an_untitled_anthropic_pdf_gets_a_file_name_for_openai() -> None:
    block = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="},
    }
    back = ctxpack.to_openai(ctxpack.from_anthropic([{"role": "user", "content": [block]}]))
    assert back[0]["content"][0]["file"] == {
        "filename": "document.pdf",
        "file_data": "data:application/pdf;base64,JVBERg==",
    }


@pytest.mark.parametrize(
    ("part", "field", "says"),
    [
        (
            {"type": "file", "file": {"file_data": 5}},
            "content[0].file.file_data",
            "must be a string",
        ),
        ({"type": "file", "file": {}}, "content[0].file", 'needs "file_id" or "file_data"'),
        (
            {"type": "file", "file": {"file_id": "f", "filename": 3}},
            "content[0].file.filename",
            "must be a string",
        ),
    ],
)
def test_a_malformed_file_part_is_refused_naming_its_field(
    part: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        ctxpack.pack([{"role": "user", "content": [part]}], budget=5_000, model="gpt-4o")
    assert (caught.value.index, caught.value.field) == (0, field)
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("source", "field"),
    [({"type": "text"}, "content[0].source.data"), ({"type": "file"}, "content[0].source.file_id")],
)
def test_a_malformed_document_source_is_refused_naming_its_field(
    source: dict[str, Any], field: str
) -> None:
    block = {"type": "document", "source": source}
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        ctxpack.from_anthropic([{"role": "user", "content": [block]}])
    assert (caught.value.index, caught.value.field) == (0, field)


def test_a_responses_input_file_reaches_anthropic_as_a_document() -> None:
    data = b64(make_pdf(2))
    part = {
        "type": "input_file",
        "filename": "q3.pdf",
        "file_data": "data:application/pdf;base64," + data,
    }
    history = ctxpack.from_openai([{"role": "user", "content": [part]}])
    assert ctxpack.to_openai(history, api="responses")[0]["content"] == [part]
    assert ctxpack.to_anthropic(history)["messages"][0]["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
            "title": "q3.pdf",
        }
    ]


def test_a_responses_input_file_needs_a_source() -> None:
    with pytest.raises(ctxpack.InvalidMessageError) as caught:
        ctxpack.from_openai([{"role": "user", "content": [{"type": "input_file"}]}])
    assert caught.value.field == "content[0]"
    assert '"file_id" or "file_data" or "file_url"' in str(caught.value)


def test_a_langchain_file_block_counts_its_pages() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from ctxpack.adapters.langchain import from_langchain

    block = {"type": "file", "base64": b64(make_pdf(3)), "mime_type": "application/pdf"}
    history = from_langchain([HumanMessage(content=[block])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its data is there: no guess, no warning
        tokens = ctxpack.count_tokens(history, model="gpt-4o")
    assert tokens == 3 + 1 + 3 * PDF_PAGE_TOKENS + 3


def test_what_a_server_tool_fetched_counts_as_pages_and_images_not_base64_text() -> None:
    """A PDF web_fetch read and a screenshot an MCP server's tool took are billed as a document
    and an image, as in a client's tool_result: they counted as the text of their base64 data
    (this 12-page PDF of 300 kB some 406,000 tokens, not 36,000)."""
    pdf = make_pdf(12, padding=300_000)
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": b64(pdf)},
    }
    png = zlib.compress(b"\x00" * 400_000, 0)  # not an image we can read: a fallback size
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(png)},
    }
    fetched = {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "web_fetch_result", "url": "https://x.test/r.pdf", "content": document},
    }
    shot = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": [image]}
    counter = ctxpack.get_counter("claude-sonnet-4-5")

    def tokens(part: dict[str, Any], role: str = "assistant") -> int:
        return counter.count_message(ctxpack.Message(role=role, content=[part]))

    # The pages and the image as the same parts cost in a user message (the one Anthropic
    # takes them in), and the wrapping's text.
    assert 0 < tokens(fetched) - tokens(document, "user") < 100
    assert 0 < tokens(shot) - tokens(image, "user") < 100
    assert tokens(document, "user") >= 12 * PDF_PAGE_TOKENS
    assert tokens(image, "user") < 5_000
