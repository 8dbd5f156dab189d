"""Whether a media part's data is base64 (an image's, a document's, an audio clip's), as a
provider requires: the problem to name, or ``None``.

A history is checked again each time it is packed, counted or converted (a render converts it
every turn), and decoding a large file each time costs more than the rest of that work, so a
long text found valid is remembered. Not the text itself: its length and the hash Python keeps
on the string, so that a repeated check of the same string is a lookup, and the cache holds
neither a user's files (nothing of them outlives the history, an erasure included) nor their
megabytes. Two texts of one length whose 64-bit hashes collide would let the second pass
unchecked: the provider would then refuse it, as it does today without the check.
"""

from __future__ import annotations

import base64
from typing import Literal

from ..caches import LRUCache

__all__: list[str] = []

# Shorter texts decode in about the time a lookup takes: not remembered.
_REMEMBERED_FROM = 8_192

_Kind = Literal["base64", "data URL"]

# (kind, length, hash) -> True for a text found valid. The kind keeps a data URL found valid
# from passing as raw base64 (which its "data:" head is not).
_VALID: LRUCache[tuple[_Kind, int, int], bool] = LRUCache(
    1_024, maxbytes=256 << 10, name="valid base64 data"
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
    start = base64_start(url)
    return None if start is None else _problem("data URL", url, start)


def base64_start(url: str, *, within: int | None = None) -> int | None:
    """Where the base64 of a ``data:<media type>;base64,<data>`` URL starts, or ``None`` for
    any other text. The scheme and the ``base64`` mark are read in any case, as URL schemes
    and MIME tokens are (RFC 3986, RFC 2045) and as browsers read them; ``within``: the head
    (up to the comma) is looked for in the first ``within`` characters only.

    Example:
        >>> base64_start("DATA:image/png;BASE64,iVBO"), base64_start("data:text/plain,hi")
        (22, None)
    """
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",", 5) if within is None else url.find(",", 5, within)
    if comma == -1 or url[max(5, comma - 7) : comma].lower() != ";base64":
        return None
    return comma + 1


def _problem(kind: _Kind, text: str, start: int) -> str | None:
    remembered = len(text) >= _REMEMBERED_FROM
    key = (kind, len(text), hash(text))
    if remembered and _VALID.get(key):
        return None
    data = text[start:] if start else text
    try:
        padded = data + "=" * (-len(data) % 4) if len(data) % 4 else data
        base64.b64decode(padded, validate=True)
    except ValueError as exc:  # binascii.Error, or a character that is not ASCII
        return f"is not valid base64 ({exc}); {_HINT}"
    if remembered:
        _VALID.put(key, True)
    return None
