"""Processes sharing a cold cache encode each missing text once in total and get the same vectors."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
import zlib
from multiprocessing.synchronize import Barrier
from pathlib import Path

import numpy as np

from engine.encode import embed_distinct

JOBS = 4


class RecordingEncoder:
    """A stand-in encoder that appends every text it encodes to a file and takes a while."""

    identity = "recording-v1"

    def __init__(self, record: Path) -> None:
        self.record = record

    def encode(self, texts: list[str], save: object = None, every: float = 0.0) -> np.ndarray:
        with self.record.open("a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(t) + "\n" for t in texts)
        time.sleep(0.3)  # long enough for every job to look at the cold cache meanwhile
        return vector_of(texts)


def vector_of(texts: list[str]) -> np.ndarray:
    """The stand-in's embeddings: a function of the text alone."""
    return np.stack([np.full(3, zlib.crc32(t.encode()) % 9973, np.float32) + np.arange(3, dtype=np.float32)
                     for t in texts])


def job_texts(job: int) -> list[str]:
    """Texts of one job: some common to all jobs, some shared with the next job, some its own."""
    return ([f"common-{i}" for i in range(30)] + [f"pair-{job}-{i}" for i in range(10)]
            + [f"pair-{(job - 1) % JOBS}-{i}" for i in range(10)] + [f"own-{job}-{i}" for i in range(10)])


def _job(cache_dir: str, out_dir: str, job: int, start: Barrier) -> None:
    out = Path(out_dir)
    start.wait()
    vectors, stats = embed_distinct(job_texts(job), RecordingEncoder(out / f"encoded-{job}.jsonl"), cache_dir)
    np.save(out / f"vectors-{job}.npy", vectors)
    (out / f"stats-{job}.json").write_text(json.dumps([stats.cached, stats.encoded]))


def test_concurrent_jobs_encode_each_text_once(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(JOBS)
    out = tmp_path / "out"
    out.mkdir()
    jobs = [ctx.Process(target=_job, args=(str(tmp_path / "cache"), str(out), j, start)) for j in range(JOBS)]
    for p in jobs:
        p.start()
    for p in jobs:
        p.join(timeout=120)
    assert [p.exitcode for p in jobs] == [0] * JOBS
    encoded = [json.loads(line) for f in sorted(out.glob("encoded-*.jsonl")) for line in f.read_text().splitlines()]
    distinct = {t for j in range(JOBS) for t in job_texts(j)}
    assert set(encoded) == distinct and len(encoded) == len(distinct) == 110
    stats = [json.loads((out / f"stats-{j}.json").read_text()) for j in range(JOBS)]
    assert sum(e for _, e in stats) == len(distinct) and all(c + e == 60 for c, e in stats)
    for j in range(JOBS):  # the vectors of its texts, whoever encoded them: the same in every job
        np.testing.assert_array_equal(np.load(out / f"vectors-{j}.npy"), vector_of(job_texts(j)))
