"""The encoder: texts tokenized once, token-budget batches, checked against sentence-transformers' own `encode`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.contract import read_trajectories
from engine.encoders import PAD_SPARE, TOKEN_BUDGET, TextEncoder, full_precision, length_window, token_batches
from engine.serialize import flatten_sweep


@pytest.mark.parametrize("spare", [0, PAD_SPARE])
def test_token_batches_cover_every_row_once_within_a_length_window(spare: int) -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 200, size=2000)
    batches = token_batches(lengths, 64, 2048, spare)
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(2000))
    for b in batches:
        longest = int(lengths[b].max())
        assert int(lengths[b[0]]) == longest and len(b) <= 64 and len(b) * longest <= max(2048, longest)
        within_window = longest - int(lengths[b].min()) <= length_window(longest)
        assert within_window or int((longest - lengths[b]).sum()) <= spare
    firsts = [int(lengths[b[0]]) for b in batches]
    assert firsts == sorted(firsts, reverse=True)
    assert all(np.all(np.diff(b[lengths[b] == lengths[b[0]]]) > 0) for b in batches), "input order within a length"
    assert sum(len(b) == 1 for b in batches) == 0


def test_texts_of_many_lengths_are_not_encoded_one_by_one() -> None:
    """60 texts of 49 distinct lengths (the published tool catalogue's spread): a handful of batches."""
    distinct = np.arange(12, 110, 2)[:49]
    lengths = np.concatenate([distinct, distinct[::5][:11]])
    assert len(set(lengths.tolist())) == 49
    assert len(token_batches(lengths, 128, TOKEN_BUDGET, spare=0)) == 13  # the length window alone
    batches = token_batches(lengths, 128, TOKEN_BUDGET)
    assert [len(b) for b in batches] == [17, 17, 17, 8]


def test_token_batches_edge_cases() -> None:
    assert token_batches(np.zeros(0, dtype=np.int64), 8, 100) == []
    assert [b.tolist() for b in token_batches(np.array([5, 7, 5, 7, 7]), 2, 100)] == [[1, 3], [4, 0], [2]]
    assert [b.tolist() for b in token_batches(np.array([4, 4, 4]), 1, 100)] == [[0], [1], [2]]
    assert [b.tolist() for b in token_batches(np.array([300, 40, 300]), 8, 100)] == [[0], [2], [1]]
    assert [b.tolist() for b in token_batches(np.array([100, 10]), 8, 1000, spare=0)] == [[0], [1]]
    assert [b.tolist() for b in token_batches(np.array([100, 10]), 8, 1000)] == [[0, 1]]  # 90 padded tokens
    assert [b.tolist() for b in token_batches(np.array([400, 10]), 8, 1000)] == [[0], [1]]  # 390: over the spare
    assert [b.tolist() for b in token_batches(np.array([5, 7, 5, 7, 7]), 2, 100, ties=np.array([4, 2, 3, 0, 1]))] \
        == [[3, 4], [1, 2], [0]]  # within a length by ties


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


PADDING_TOLERANCE = 5e-7
"""How far padding may move a raw vector on CPU (about 1.2e-7 measured; the recipe in engine/encoders/base.py)."""


@pytest.mark.slow
def test_vector_does_not_depend_on_batch_mates(encoder: TextEncoder, real_texts: list[str]) -> None:
    """A text encoded alone, or padded within a batch of others: the same vector to the stated tolerance."""
    together = encoder.encode(real_texts)
    picked = [0, 40, 80, 120, 159]
    alone = np.stack([encoder.encode([real_texts[i]])[0] for i in picked])
    np.testing.assert_allclose(alone, together[picked], rtol=0, atol=PADDING_TOLERANCE)
    reversed_order = encoder.encode(real_texts[::-1])[::-1]
    np.testing.assert_array_equal(reversed_order, together)
    lengths = encoder.token_lengths(real_texts)
    padded = [b for b in token_batches(lengths, encoder.batch_size, TOKEN_BUDGET) if len(set(lengths[b])) > 1]
    assert len(padded) > 5


@pytest.mark.slow
def test_texts_are_tokenized_once_into_the_features_preprocess_gives(encoder: TextEncoder,
                                                                    real_texts: list[str]) -> None:
    tokens = encoder.tokenize(real_texts)
    assert tokens.right_padded and tokens.lengths.max() == encoder.model.max_seq_length
    for rows in token_batches(tokens.lengths, 16, 1024):
        mine, theirs = tokens.batch(rows), encoder.model.preprocess([real_texts[i] for i in rows])
        assert mine.keys() == theirs.keys()
        for key, value in theirs.items():
            assert torch.equal(mine[key], value) if isinstance(value, torch.Tensor) else mine[key] == value, key


def test_encode_runs_at_full_precision_and_restores_the_settings(encoder: TextEncoder) -> None:
    seen = []
    hook = encoder.model.register_forward_pre_hook(lambda *_: seen.append(
        (torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32)))
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")
        encoder.encode(["a call", "another call"])
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(before)
        hook.remove()
    assert seen and all(s == ("highest", False) for s in seen)
    with full_precision():
        assert torch.get_float32_matmul_precision() == "highest"


def test_the_cache_identity_names_the_device() -> None:
    cpu, cuda, cuda0 = (TextEncoder(device=d).identity for d in ("cpu", "cuda", "cuda:0"))
    assert cpu != cuda == cuda0


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("progress", [True, False])
def test_encoding_past_the_delay_shows_its_progress_on_a_terminal(encoder: TextEncoder, progress: bool,
                                                                  monkeypatch, tmp_path) -> None:
    """Any encoding that lasts past PROGRESS_DELAY shows a bar on a terminal's stderr (here the delay is 0),
    whatever the number of texts; none with progress off, and none into a redirected stderr (a log file)."""
    monkeypatch.setattr("engine.encoders.tokens.PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(encoder, "progress", progress)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    encoder.encode(["a call", "another call", "a third"])
    assert ("Encoding: 100%" in terminal.getvalue() and "3/3" in terminal.getvalue()) is progress
    with (tmp_path / "err.log").open("w") as log_file:
        monkeypatch.setattr(sys, "stderr", log_file)
        encoder.encode(["a fourth call", "a fifth"])
    assert (tmp_path / "err.log").read_text() == ""
