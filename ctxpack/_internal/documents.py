"""Tokens of a document content part (a PDF or a text file), as the providers bill it.

A provider reads a PDF as the text of each page and a picture of it, so its cost follows its
pages, not its bytes: counted as JSON, a 300 KB PDF of a dozen pages came to 270,000 tokens and
no budget could hold it. Neither OpenAI nor Anthropic publishes an exact per-page formula, so a
page is estimated at :data:`PDF_PAGE_TOKENS`; a text document counts as its text.
"""

from __future__ import annotations

import base64
import binascii
import re
import warnings
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from ..caches import LRUCache
from ..errors import ApproximateTokenCountWarning
from .images import langchain_base64

__all__: list[str] = []

DOCUMENT_TYPES = frozenset({"file", "input_file", "document"})

# The media types of text that are not text/*: formats registered as application/ (RFC 8259's
# JSON, RFC 7303's XML, RFC 9512's YAML, TOML, JavaScript, SQL, shell scripts, NDJSON), and
# any with a structured syntax suffix for JSON, XML or YAML (RFC 6839: application/ld+json).
_TEXT_APPLICATIONS = re.compile(
    r"application/(?:json|xml|yaml|x-yaml|toml|javascript|x-javascript|ecmascript|sql|x-sh|"
    r"x-shellscript|x-ndjson|x-www-form-urlencoded|[\w.+-]+\+(?:json|xml|yaml))\Z"
)


def is_text_media(media: str) -> bool:
    """Whether a file of the media type ``media`` (parameters such as ``; charset=`` aside)
    is text.

    Example:
        >>> [is_text_media(m) for m in ("text/csv", "application/ld+json", "application/pdf")]
        [True, True, False]
    """
    kind = media.partition(";")[0].strip().lower()
    return kind.startswith("text/") or _TEXT_APPLICATIONS.match(kind) is not None


"""Content part types that carry a document: OpenAI's Chat Completions ``file``, the Responses
API's ``input_file`` and Anthropic's ``document`` block."""

PDF_PAGE_TOKENS = 3_000
"""Tokens assumed for a page of a PDF: the top of the 1,500 to 3,000 tokens of text a page
takes by Anthropic's PDF guide, which is above what measured bills show for a page's text and
picture together, so that a PDF is not under-counted."""

# A page object, not the /Pages tree node above the pages.
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
# Object streams (PDF 1.5) pack many objects, the pages among them, into a compressed stream.
_OBJECT_STREAM = re.compile(rb"<<(?:(?!>>).)*?/Type\s*/ObjStm(?:(?!>>).)*?>>\s*stream\r?\n", re.S)
# The scheme in any case, as URL schemes are read.
_DATA_URL = re.compile(r"data:([^;,]*)(?:;[^,]*)?,", re.A | re.I)

# Keyed by the file's base64 text, which its message holds anyway; bounded in bytes.
_PAGES: LRUCache[str, int] = LRUCache(256, maxbytes=16 << 20, name="PDF page counts")


def document_tokens(part: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """The tokens of a document part; ``count`` counts a text (a text document, a file name,
    an Anthropic ``title``).

    A file sent by id or URL, whose size only the provider knows, counts as one page, with an
    :class:`~ctxpack.tokens.ApproximateTokenCountWarning`.
    """
    kind = part.get("type")
    tokens, seen = (_anthropic_document if kind == "document" else _openai_file)(part, count)
    if not seen:
        warnings.warn(
            f"a {kind} part sent by id or URL counts as one PDF page ({PDF_PAGE_TOKENS:,} "
            "tokens): only the provider knows its size",
            ApproximateTokenCountWarning,
            stacklevel=3,
        )
    return tokens


def _openai_file(part: Mapping[str, Any], count: Callable[[str], int]) -> tuple[int, bool]:
    kind = part.get("type")
    inner = part.get("file") if kind == "file" else part
    info: Mapping[str, Any] = inner if isinstance(inner, Mapping) else {}
    name = info.get("filename")
    named = count(name) if isinstance(name, str) else 0
    data = info.get("file_data")
    if isinstance(data, str) and data:
        match = _DATA_URL.match(data)
        media, start = (match.group(1), match.end()) if match else ("", 0)
        return named + _base64_tokens(media, data, start, count), True
    inline = langchain_base64(part)  # a LangChain file block: its data at the top
    if inline is not None:
        media = part.get("mime_type")
        return _base64_tokens(media if isinstance(media, str) else "", inline, 0, count), True
    return named + PDF_PAGE_TOKENS, False


def _anthropic_document(block: Mapping[str, Any], count: Callable[[str], int]) -> tuple[int, bool]:
    named = sum(
        count(value) for key in ("title", "context") if isinstance(value := block.get(key), str)
    )
    source = block.get("source")
    info: Mapping[str, Any] = source if isinstance(source, Mapping) else {}
    kind, data = info.get("type"), info.get("data")
    if kind == "base64" and isinstance(data, str):
        media = info.get("media_type")
        media = media if isinstance(media, str) else ""
        return named + _base64_tokens(media, data, 0, count), True
    if kind == "text" and isinstance(data, str):
        return named + count(data), True
    if kind == "content":
        content = info.get("content")
        if isinstance(content, str):
            return named + count(content), True
        if isinstance(content, list):
            texts = [b.get("text") for b in content if isinstance(b, Mapping)]
            return named + sum(count(t) for t in texts if isinstance(t, str)), True
    return named + PDF_PAGE_TOKENS, False


def _base64_tokens(media: str, data: str, start: int, count: Callable[[str], int]) -> int:
    """Tokens of the base64 file in ``data[start:]`` (``data`` may open with a data URL's
    header), a text file's by its text, any other's as a PDF's pages."""
    if is_text_media(media):
        try:
            return count(base64.b64decode(data[start:]).decode("utf-8", "replace"))
        except (binascii.Error, ValueError):
            return count(data[start:])
    return max(1, _pdf_pages(data, start)) * PDF_PAGE_TOKENS


def _pdf_pages(data: str, start: int) -> int:
    """The page objects of the base64 PDF in ``data[start:]``, those packed in compressed
    object streams included (0 if none is found)."""
    # Keyed by the caller's own string: its hash is computed once, and nothing is copied.
    cached = _PAGES.get(data)
    if cached is not None:
        return cached
    try:
        raw = base64.b64decode(data[start:])
    except (binascii.Error, ValueError):
        raw = b""
    pages = len(_PAGE.findall(raw))
    for match in _OBJECT_STREAM.finditer(raw):
        end = raw.find(b"endstream", match.end())
        try:
            # Bounded: an object stream inflated past 64 MB is a bomb, not a page table.
            inflated = zlib.decompressobj().decompress(raw[match.end() : end], 64 << 20)
        except zlib.error:
            continue
        pages += len(_PAGE.findall(inflated))
    _PAGES.put(data, pages)
    return pages
