"""Whether a media part's data is base64 (an image's, a document's, an audio clip's), as a
provider requires: the problem to name, or ``None``.

A history is checked again each time it is packed, counted or converted (a render converts it
every turn), and decoding a large file each time costs more than the rest of that work, so a
long text found valid is remembered: keyed by the text itself, whose hash Python keeps on the
string, a repeated check of the same string is a lookup.
"""

from __future__ import annotations

import base64
import sys
from typing import Literal

from ..caches import ENTRY_OVERHEAD, LRUCache

__all__: list[str] = []

# Shorter texts decode in about the time a lookup takes: not remembered.
_REMEMBERED_FROM = 8_192

_Kind = Literal["base64", "data URL"]

# (kind, text) -> True for a text found valid. The kind keeps a data URL found valid from
# passing as raw base64 (which its "data:" head is not).
_VALID: LRUCache[tuple[_Kind, str], bool] = LRUCache(
    1_024,
    maxbytes=64 << 20,
    weigh=lambda key, _: ENTRY_OVERHEAD + sys.getsizeof(key[1]),
    name="valid base64 data",
)

_HINT = (
    "encode the file's bytes with base64.b64encode (letters, digits, + and /, no spaces or "
    "line breaks)"
)


def base64_problem(data: str) -> str | None:
    """Why ``data`` is not base64 (its padding may be left out), or ``None``.

    Example:
        >>> base64_problem("aGk"), base64_problem("a b")[:20]
        (None, 'is not valid base64 ')
    """
    return _problem("base64", data, 0)


def data_url_problem(url: str) -> str | None:
    """Why the base64 of a ``data:...;base64,...`` URL is not base64, or ``None`` (for any
    other URL too: that is the provider's to judge).

    Example:
        >>> data_url_problem("data:image/png;base64,iVBORw0K"), data_url_problem("https://x")
        (None, None)
    """
    if url[:5].lower() != "data:":
        return None
    mark = url.find(";base64,", 5)
    return None if mark == -1 else _problem("data URL", url, mark + 8)


def _problem(kind: _Kind, text: str, start: int) -> str | None:
    remembered = len(text) >= _REMEMBERED_FROM
    if remembered and _VALID.get((kind, text)):
        return None
    data = text[start:] if start else text
    try:
        padded = data + "=" * (-len(data) % 4) if len(data) % 4 else data
        base64.b64decode(padded, validate=True)
    except ValueError as exc:  # binascii.Error, or a character that is not ASCII
        return f"is not valid base64 ({exc}); {_HINT}"
    if remembered:
        _VALID.put((kind, text), True)
    return None
