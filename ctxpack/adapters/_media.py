"""OpenAI's images and files as Anthropic's ``image`` and ``document`` blocks, and the note
standing for a part a provider has no form for."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from .._internal.base64_data import base64_start
from .._internal.documents import is_text_media

__all__: list[str] = []

# The spelling of a media type the API does not know.
_MEDIA_ALIASES = {"image/jpg": "image/jpeg"}


def _media_type(head: str, default: str) -> str:
    """The media type of a data URL's head (``image/png;name=a.png``), without its parameters,
    as the API spells it."""
    media = head.split(";", 1)[0].strip().lower() or default
    return _MEDIA_ALIASES.get(media, media)


# The image formats the Messages API reads; it refuses any other media type (an SVG, a TIFF).
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_FORMATS = "Anthropic's API takes JPEG, PNG, GIF and WebP images only"


def image_block(part: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI image part as an ``image`` block, or the note standing for an image the API
    would refuse: no URL or one it cannot fetch, a data URL not in base64, a format it does not
    read."""
    kind = str(part.get("type"))
    inner = part.get("image_url")
    url = str(inner.get("url", "")) if isinstance(inner, Mapping) else str(inner or "")
    if not url.strip():
        return not_sent(kind, False, why="it has no URL")
    if url[:5].lower() == "data:":
        start = base64_start(url)
        if start is None:
            return not_sent(kind, False, why=f"a data URL not in base64; {_FORMATS}")
        media = _media_type(url[5 : start - 8], "image/png")
        if media not in _IMAGE_TYPES:
            return not_sent(kind, False, why=f"{media}; {_FORMATS}")
        # One copy of the data (a render converts the history each turn): no split of the URL.
        data = url[start:]
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    if not url.lower().startswith(("https://", "http://")):
        # A path, a bucket's gs:// or s3:// address: nothing the API can fetch.
        return not_sent(kind, False, why="not an http(s) URL Anthropic's API can fetch")
    path = url.split("#", 1)[0].split("?", 1)[0]
    if path.lower().endswith((".svg", ".svgz")):
        return not_sent(kind, False, why=f"an SVG; {_FORMATS}")
    return {"type": "image", "source": {"type": "url", "url": url}}


def document_block(part: Mapping[str, Any]) -> dict[str, Any]:
    inner = part.get("file") if part.get("type") == "file" else part
    info: Mapping[str, Any] = inner if isinstance(inner, Mapping) else {}
    data, url = info.get("file_data"), info.get("file_url")
    source: dict[str, Any] | None = None
    start = base64_start(data) if isinstance(data, str) else None
    if isinstance(data, str) and start is not None:
        source = _document_source(data, start)
    elif isinstance(url, str) and url:
        why = _unfetched(url, info.get("filename"))
        if why is not None:
            return not_sent(str(part.get("type")), False, why=why)
        source = {"type": "url", "url": url}
    if source is None or source.get("media_type") not in (None, "application/pdf", "text/plain"):
        # An OpenAI file id means nothing to Anthropic, which reads a base64 document as a PDF
        # (or text) only: a Word file, an archive has no form there.
        return not_sent(str(part.get("type")), False, to="Anthropic")
    block: dict[str, Any] = {"type": "document", "source": source}
    if isinstance(info.get("filename"), str):
        block["title"] = info["filename"]
    return block


# Formats a file by URL is known to be in by its name, none of them a PDF: Anthropic's API reads
# a document by URL as a PDF only. A name it does not list (none, a PDF's, an arXiv id's
# "2401.00001v2", a script's ".php") may serve a PDF, and goes, for the API to fetch.
_NOT_PDF = frozenset(
    {
        *("doc", "docx", "dot", "odt", "rtf", "pages", "epub", "xls", "xlsx", "ods", "numbers"),
        *("ppt", "pptx", "odp", "key", "txt", "text", "md", "markdown", "rst", "csv", "tsv"),
        *("json", "jsonl", "xml", "yaml", "yml", "toml", "html", "htm", "log", "tex", "py"),
        *("zip", "gz", "tgz", "tar", "7z", "rar", "png", "jpg", "jpeg", "gif", "webp", "svg"),
        *("mp3", "wav", "mp4", "mov"),
    }
)


def _unfetched(url: str, filename: Any) -> str | None:
    """Why Anthropic's API cannot read the document at ``url`` (named ``filename``), or
    ``None``: it fetches http(s) only, and a PDF only."""
    if not url.lower().startswith(("https://", "http://")):
        return "not an http(s) URL Anthropic's API can fetch"
    for name in (url.split("#", 1)[0].split("?", 1)[0], filename):
        if isinstance(name, str) and "." in name.rsplit("/", 1)[-1]:
            extension = name.rsplit(".", 1)[1].lower()
            if extension in _NOT_PDF:
                return f"a .{extension} file by URL; Anthropic's API reads a PDF only by URL"
    return None


def _document_source(data: str, start: int) -> dict[str, Any]:
    """The source of a document sent as a data URL whose base64 starts at ``start``: a PDF's
    base64, a text file's text."""
    head, payload = _media_type(data[5 : start - 8], "application/pdf"), data[start:]
    source = {"type": "base64", "media_type": head, "data": payload}
    if is_text_media(head):
        # Anthropic reads a base64 document as a PDF only; a text file goes as its text.
        try:
            raw = base64.b64decode(payload + "=" * (-len(payload) % 4), validate=True)
        except ValueError:
            raw = None  # not base64 after all: no form Anthropic reads
        if raw is not None:
            text = raw.decode("utf-8", "replace")
            source = {"type": "text", "media_type": "text/plain", "data": text}
    return source


def not_sent(
    kind: str, text_only: bool, *, to: str = "OpenAI", why: str | None = None
) -> dict[str, str]:
    """The text part standing for a part of ``kind`` the message ``to`` a provider cannot
    hold (``why``: the reason, when it is not the part's kind)."""
    if why is None:
        why = "a tool message holds text only" if text_only else f"{to}'s API has no form for it"
    return {"type": "text", "text": f"[{kind} not sent: {why}]"}
