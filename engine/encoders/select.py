"""`encoder.backend=auto`: the backend chosen by measurement on the machine at hand, the choice cached.

On first use each installed backend that runs on the device (torch always; ONNX Runtime and OpenVINO on
the CPU) encodes a fixed sample of call texts (`sample_texts`): once to prepare it (export, compile) and
to check its parity (cosine similarities within PARITY of torch's), then ROUNDS times more, the
backends alternating (their order turning each round) so that a machine's changing load falls on all of
them alike. Each backend's time is the median over the rounds of its time divided by torch's in the
same round; the fastest that holds parity is kept when it beats torch by MARGIN at least, else torch.

The choice is written to ``<export root>/backends/<model>-<key>.json`` (under the embedding cache), the key
covering what decides it: the CPU's model and flags, its cores and the threads a backend gets, the
device (a GPU's name), the versions of the libraries, the model's identity, the sample and this recipe;
any change is measured again. Without an export root the choice is measured in each process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from engine.contract import ConfigError, JsonMapping, JsonObject
from engine.contract.atomic import atomic_write_json
from engine.encoders.base import PARITY, Encoder, cosine_gap, cpu_threads
from engine.encoders.export import version
from engine.serialize import call_text
from engine.synthetic import make_reference

log = logging.getLogger("engine.encode")

BACKENDS = ("auto", "torch", "onnxruntime", "openvino")
"""encoder.backend values."""

DEVICES = {"torch": ("cpu", "cuda", "mps", "xpu"), "onnxruntime": ("cpu",), "openvino": ("cpu",)}
"""The device types each backend runs on."""

PACKAGES = {"torch": ("torch",), "onnxruntime": ("onnxruntime", "onnx"), "openvino": ("openvino", "onnx")}
"""What each backend needs installed."""

VERSIONED = ("torch", "transformers", "sentence-transformers", "numpy", "onnxruntime", "onnx", "openvino")
"""The libraries whose versions are part of a choice's key."""

ROUNDS = 3
"""Timed rounds of the measurement (after one that prepares each backend and checks its parity)."""

MARGIN = 1.10
"""How much faster than torch (time ratio 1 / MARGIN at most) a backend must be to replace it: less is
within the measurement's noise on a shared machine, and torch's vectors are the reference."""

SAMPLE_TASKS = 12
"""Generated reference tasks whose call texts make the sample (engine.synthetic.make_reference)."""

LOCK_WAIT_S = 900.0
"""How long a process waits for another measuring the same choice (an export can take minutes under load)
before measuring on its own."""

RECIPE = f"rounds={ROUNDS}; margin={MARGIN}; median of paired ratios to torch; parity {PARITY}"


def sample_texts() -> list[str]:
    """The fixed sample: the distinct call texts of SAMPLE_TASKS generated tasks (about 50, 4-70 tokens), then
    texts of 3 to 12 of them joined (100-256 tokens, as the longest real calls)."""
    texts: dict[str, None] = {}
    for task in make_reference(SAMPLE_TASKS, seed=0):
        for step in task["steps"]:
            for call in step["calls"]:
                texts.setdefault(call_text(call["name"], call.get("arguments", {})), None)
    short = list(texts)
    joined = [" ".join(short[i:i + k]) for i, k in zip(range(0, 48, 8), (3, 4, 6, 8, 10, 12))]
    return short + joined


def device_type(device: str) -> str:
    """The type of a device name (cuda:1 -> cuda)."""
    return device.split(":")[0]


def installed(name: str) -> bool:
    """Whether every package the backend needs can be imported (nothing is imported)."""
    return all(importlib.util.find_spec(p) is not None for p in PACKAGES[name])


def check_backend(value: object, device: str = "cpu") -> str:
    """An encoder.backend value checked: one of BACKENDS (None or empty: auto); a backend that does not run
    on the device is refused in one line."""
    name = "auto" if value in (None, "") else str(value)
    if name not in BACKENDS:
        raise ConfigError(f"encoder.backend={value}: expected one of {', '.join(BACKENDS)}")
    if name != "auto" and device_type(device) not in DEVICES[name]:
        raise ConfigError(f"encoder.backend={name} runs on the CPU only, not device={device}: "
                          "set device=cpu, or encoder.backend=torch or auto")
    return name


def candidates(device: str) -> list[str]:
    """The installed backends that run on the device, torch first."""
    return [name for name in DEVICES if device_type(device) in DEVICES[name] and installed(name)]


def _cpuinfo() -> dict[str, str]:
    """The CPU's model name and a digest of its flags (from /proc/cpuinfo where there is one)."""
    name, flags = platform.processor() or platform.machine(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "Hardware", "cpu model") and name in ("", platform.processor(),
                                                                          platform.machine()):
                name = value.strip()
            elif key in ("flags", "Features") and not flags:
                flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    return {"cpu": name, "flags": hashlib.sha256(flags.encode()).hexdigest()[:16]}


def machine(device: str) -> JsonObject:
    """What decides the choice besides the model: the CPU (model, flags), its cores and the threads a
    backend computes on, the device (with a GPU's name), the libraries' versions."""
    where = device_type(device)
    if where == "cuda":
        import torch

        where = f"cuda {torch.cuda.get_device_name(torch.device(device))}"
    return {**_cpuinfo(), "cores": os.cpu_count(), "threads": cpu_threads(), "arch": platform.machine(),
            "device": where, "versions": {p: version(p) for p in VERSIONED}}


@dataclass
class Choice:
    """What `auto` chose and the figures it chose by."""

    backend: str
    candidates: list[str]
    ratio: dict[str, float]                     # each backend's time / torch's, median over the rounds
    seconds: dict[str, list[float]]             # each round's time of each backend
    prepare_seconds: dict[str, float]           # the first encode: export or compile, parity, warm-up
    parity: dict[str, float]                    # cosine gap to torch's similarities on the sample
    refused: dict[str, str]                     # backends left out, and why
    texts: int
    measured: str                               # when (UTC, ISO 8601)
    load_average: list[float]                   # before the measurement
    machine: JsonObject
    key: str
    cached: str | None = field(default=None)    # the file it was read from or written to

    def line(self) -> str:
        """One line for the log: the choice and its figures."""
        if not self.texts:
            return (f"encoder.backend=auto: torch on {self.machine['device']}, the only backend installed for it "
                    "(nothing measured)")
        figures = ", ".join(f"{n} {self.ratio[n]:.2f}x torch's time (min {min(self.seconds[n]):.2f}s)"
                            for n in self.ratio)
        refused = "".join(f"; {n} left out: {why}" for n, why in self.refused.items())
        return (f"encoder.backend=auto: {self.backend} on {self.machine['device']} ({self.machine['cpu']}, "
                f"{self.machine['threads']} threads), measured {self.measured} on {self.texts} texts at load "
                f"average {self.load_average[0]:.2f}: {figures}{refused}")

    def meta(self) -> dict[str, object]:
        """The choice as a run's outputs record it."""
        return {"backend": "auto", "chosen": self.backend, "ratio_to_torch": self.ratio,
                "seconds": self.seconds, "parity_gap": self.parity, "refused": self.refused, "texts": self.texts,
                "measured": self.measured, "load_average": self.load_average, "machine": self.machine,
                "key": self.key}


def choice_key(model_identity: str, info: JsonMapping, names: list[str], texts: list[str]) -> str:
    """The digest of everything that decides a choice."""
    h = hashlib.sha256(json.dumps({"model": model_identity, "machine": info, "candidates": names,
                                   "recipe": RECIPE}, sort_keys=True).encode())
    for text in texts:
        h.update(text.encode() + b"\0")
    return h.hexdigest()[:20]


def _read(path: Path, key: str) -> Choice | None:
    try:
        data = json.loads(path.read_text())
        choice = Choice(**{k: v for k, v in data.items() if k in Choice.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None
    return choice if choice.key == key and choice.backend in DEVICES else None


def measure(encoders: Mapping[str, Encoder], texts: list[str], key: str, info: JsonObject) -> Choice:
    """Prepare each backend on the texts (parity against torch's vectors), then time the ones that hold
    parity over ROUNDS alternating rounds; the Choice (see the module's docstring). Torch alone (no other
    backend installed for the device) is the choice with nothing to measure or prepare."""
    assert "torch" in encoders, "torch is the reference"
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else [0.0, 0.0, 0.0]
    if len(encoders) == 1:
        return Choice(backend="torch", candidates=["torch"], ratio={"torch": 1.0}, seconds={"torch": []},
                      prepare_seconds={}, parity={}, refused={}, texts=0,
                      measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      load_average=[round(v, 2) for v in load], machine=info, key=key)
    vectors, prepare, refused, parity = {}, {}, {}, {}
    for name, encoder in encoders.items():
        start = time.perf_counter()
        try:
            vectors[name] = encoder.encode(texts)
        except Exception as exc:  # a runtime that fails here is left out, not fatal
            if name == "torch":
                raise
            refused[name] = " ".join(str(exc).split())[:300] or type(exc).__name__
            continue
        prepare[name] = round(time.perf_counter() - start, 3)
        if name != "torch":
            parity[name] = cosine_gap(vectors["torch"], vectors[name])
            if not parity[name] <= PARITY:
                refused[name] = f"cosine gap {parity[name]:.1e} to torch > {PARITY:.0e}"
    names = [n for n in encoders if n not in refused]
    seconds: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(ROUNDS):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            start = time.perf_counter()
            encoders[name].encode(texts)
            seconds[name].append(round(time.perf_counter() - start, 4))
    ratio = {n: round(statistics.median(s / t for s, t in zip(seconds[n], seconds["torch"])), 4) for n in names}
    best = min(names, key=lambda n: (ratio[n], n != "torch"))
    return Choice(backend=best if ratio[best] <= 1 / MARGIN else "torch", candidates=list(encoders), ratio=ratio,
                  seconds=seconds, prepare_seconds=prepare, parity=parity, refused=refused, texts=len(texts),
                  measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), load_average=[round(v, 2) for v in load],
                  machine=info, key=key)


def choose(device: str, model_name: str, model_identity: str, build: Callable[[str], Encoder],
           root: Path | None) -> tuple[Choice, dict[str, Encoder]]:
    """The backend `auto` picks on this machine: the cached choice under root when its key matches, else a
    measurement (under a lock, written for the next process). Returns the choice and the encoders the
    measurement built (empty when it was cached), so the one chosen is not built twice."""
    names = candidates(device)
    info = machine(device)
    texts = sample_texts()
    key = choice_key(model_identity, info, names, texts)
    path = root / "backends" / f"{model_name}-{key}.json" if root is not None else None
    if path is not None and (found := _read(path, key)) is not None:
        found.cached = str(path)
        return found, {}
    if path is None:
        choice, built = _measured(names, build, texts, key, info)
        return choice, built
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path.parent / ".lock"))
    try:
        lock.acquire(timeout=LOCK_WAIT_S)
    except Timeout:
        log.warning("encoder.backend=auto: %s held by another process for %g s; measuring without it",
                    lock.lock_file, LOCK_WAIT_S)
        return _measured(names, build, texts, key, info)
    try:
        if (found := _read(path, key)) is not None:  # measured by another process meanwhile
            found.cached = str(path)
            return found, {}
        choice, built = _measured(names, build, texts, key, info)
        atomic_write_json(path, asdict(choice) | {"cached": None})
        choice.cached = str(path)
    finally:
        lock.release()
    return choice, built


def _measured(names: list[str], build: Callable[[str], Encoder], texts: list[str], key: str,
              info: JsonObject) -> tuple[Choice, dict[str, Encoder]]:
    encoders = {name: build(name) for name in names}
    choice = measure(encoders, texts, key, info)
    return choice, encoders
