"""The encoder: batches of one token length, checked against sentence-transformers' own `encode`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.contract import read_trajectories
from engine.encode import TextEncoder, length_batches
from engine.serialize import flatten_sweep


def test_length_batches_cover_every_row_once_in_unpadded_batches() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 40, size=500)
    batches = length_batches(lengths, 16)
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(500))
    assert all(len(set(lengths[b].tolist())) == 1 and 1 <= len(b) <= 16 for b in batches)
    firsts = [int(lengths[b[0]]) for b in batches]
    assert firsts == sorted(firsts, reverse=True)
    assert all(np.all(np.diff(b) > 0) for b in batches), "input order within a length"
    counts = np.bincount(lengths)
    per_length = np.bincount([int(lengths[b[0]]) for b in batches], minlength=len(counts))
    np.testing.assert_array_equal(per_length, -(-counts // 16))  # as few batches as max_rows allows


def test_length_batches_edge_cases() -> None:
    assert length_batches(np.zeros(0, dtype=np.int64), 8) == []
    assert [b.tolist() for b in length_batches(np.array([5, 7, 5, 7, 7]), 2)] == [[1, 3], [4], [0, 2]]
    assert [b.tolist() for b in length_batches(np.array([4, 4, 4]), 1)] == [[0], [1], [2]]


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch size 0"):
        TextEncoder(batch_size=0)


@pytest.fixture(scope="module")
def real_texts(gt_path: Path) -> list[str]:
    """Distinct call texts of the real reference file, from short to 256 tokens (truncated)."""
    gt = read_trajectories(gt_path)
    texts = flatten_sweep(gt, [gt], "reference").texts
    return [texts[i] for i in np.linspace(0, len(texts) - 1, 160).astype(int)]


@pytest.fixture(scope="module")
def encoder() -> TextEncoder:
    return TextEncoder(device="cpu", batch_size=32)


@pytest.mark.slow
def test_matches_sentence_transformers_encode(encoder: TextEncoder, real_texts: list[str]) -> None:
    ours = encoder.encode(real_texts)
    theirs = encoder.model.encode(real_texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
    assert ours.shape == theirs.shape == (len(real_texts), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    lengths = encoder.token_lengths(real_texts)
    assert lengths.max() == encoder.model.max_seq_length and lengths.min() < 16


@pytest.mark.slow
def test_vector_does_not_depend_on_batch_mates(encoder: TextEncoder, real_texts: list[str]) -> None:
    """Unpadded batches: a text encoded alone gets the same bits as within the whole set."""
    together = encoder.encode(real_texts)
    picked = [0, 40, 80, 120, 159]
    alone = np.stack([encoder.encode([real_texts[i]])[0] for i in picked])
    np.testing.assert_array_equal(alone, together[picked])
    reversed_order = encoder.encode(real_texts[::-1])[::-1]
    np.testing.assert_array_equal(reversed_order, together)


@pytest.mark.slow
def test_lengths_only_steer_batching(encoder: TextEncoder, real_texts: list[str], monkeypatch) -> None:
    """Wrong token lengths cost padding, never correctness: preprocess pads the batch."""
    right = encoder.encode(real_texts[:40])
    monkeypatch.setattr(encoder, "token_lengths", lambda texts: np.zeros(len(texts), dtype=np.int64))
    wrong = encoder.encode(real_texts[:40])
    np.testing.assert_allclose(wrong, right, rtol=0, atol=1e-6)


@pytest.mark.parametrize("progress", [True, False])
def test_encoding_past_the_delay_shows_its_progress(encoder: TextEncoder, progress: bool, monkeypatch,
                                                    capsys) -> None:
    """Any encoding that lasts past PROGRESS_DELAY shows a bar on stderr (here the delay is 0), whatever the
    number of texts; none with progress off."""
    monkeypatch.setattr("engine.encode.PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(encoder, "progress", progress)
    encoder.encode(["a call", "another call", "a third"])
    err = capsys.readouterr().err
    assert ("Encoding" in err and "3/3" in err) is progress
