"""The judge pool: each judge's identity and driver, the reply cache in front of them, a bound on the
requests each judge has in flight, and the token usage and cost of each judge.

A judge is a model config of the rollout's shape (``provider``, ``api_name``, ``base_url``,
``api_key_env``, ``params``, ``timeout``, ``max_retries``, ``backoff``; see conf/judge/judges/) plus
an optional ``price`` (USD per million input and output tokens) and ``images`` (false: the judge is sent
text only; by default it is shown the images its question names that its task's rule admits,
rollout.judges.images). Its identity, which keys its cached replies, is the provider, the model the API
is asked for and every other setting that can change a reply (``params``, a scripted judge's policy);
where it is served, its key and its timeouts are not part of it. The judge files name a judge by its
model (as the published files do), so the models of a pool differ. Drivers are built on the first
request, so a fully cached run needs no key.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.contract import InputError, JsonMapping, JsonObject, check_choice, digest, is_number
from engine.contract.settings import Judges, ModelConfig, Price, SettingError, model_node, record
from engine.evaluators.base import PoolJudge
from engine.judging import JudgeFailure, JudgeSpec, Question, Rubric
from rollout.judges.cache import ReplyCache, reply_key
from rollout.judges.images import ImageAttacher, TaskImages, named_images, shown_digest
from rollout.models.base import ModelDriver
from rollout.models.errors import ModelError
from rollout.models.registry import build_driver, providers

ANSWERS = {"scripted": ("policy", "bias")}
"""The settings that decide a judge's replies, part of its identity whatever their value, by provider; any
other provider's are its request fields (``params``)."""
OWN = ("params", "images", "script", "noise", "policy", "bias")
"""The settings of a model config besides where and how it is reached (provider, names, address, key,
timeouts, retries, prices, delay, image size, JSON mode): part of a judge's identity when they decide its
replies (`ANSWERS`) or differ from the config's defaults."""
_DEFAULT = ModelConfig(provider="")


def identity(model: ModelConfig, api_model: str) -> JsonObject:
    """What keys a judge's cached replies: its provider, the model asked for and the settings that can change
    a reply (`OWN`). The same JSON (canonically) as the judge's settings as its pool's YAML gives them, less
    where and how it is reached, for every shipped pool (a cached reply is found again)."""
    shown = record(model)
    answers = ANSWERS.get(model.provider, ("params",))
    return {"provider": model.provider, "model": api_model,
            **{k: shown[k] for k in OWN if k in answers or getattr(model, k) != getattr(_DEFAULT, k)}}


def _price(price: Price | None, key: str, where: str) -> float | None:
    value = getattr(price, key) if price is not None else None
    if value is not None and (not is_number(value) or value < 0):
        raise InputError("config", f"must be a number >= 0 (USD per million tokens) or null, got {str(value)[:40]!r}",
                         field=f"{where}.price.{key}")
    return None if value is None else float(value)


def judge_specs(pool: Mapping[str, ModelConfig | Mapping[str, object]]) -> list[JudgeSpec]:
    """The judges of a pool (name -> model config: the `Judges` node's, or a mapping of its settings), checked;
    InputError naming the setting."""
    if not pool:
        raise InputError("config", "the judge pool is empty: choose judges=<pool> or add judges", field="judges.pool")
    return pool_specs([PoolJudge(str(name), model_node(given, f"judges.pool.{name}"), f"judges.pool.{name}")
                       for name, given in pool.items()])


def pool_specs(judges: Sequence[PoolJudge]) -> list[JudgeSpec]:
    """The judges asked (a pool's, or the one an evaluator asks: engine.evaluators.base.PoolJudge), checked;
    InputError naming the judge's setting."""
    specs: list[JudgeSpec] = []
    for judge in judges:
        name, model, where = judge.name, judge.model, judge.setting
        check_choice(model.provider, providers(), "provider", f"{where}.provider")
        asked = model.api_name or name
        if any(s.identity["model"] == asked for s in specs):
            raise InputError("config", f"another judge of the pool asks for {asked!r} too (a judge is named by "
                             "its model in the judge files)", field=f"{where}.api_name")
        try:
            config = dataclasses.replace(model, name=name, api_name=asked)
        except SettingError as exc:
            raise InputError("config", exc.problem, field=where) from None
        specs.append(JudgeSpec(name, config, identity(model, asked), _price(model.price, "input", where),
                               _price(model.price, "output", where)))
    return specs


def read_prompts(path: str | Path | None) -> dict[str, str]:
    """purpose -> system prompt of a prompts file (YAML or JSON: ``{purpose: text}`` or
    ``{purpose: {system: text}}``, e.g. task_completion, information_grounding, call_outcome); empty
    without a file. InputError naming the file and the purpose otherwise."""
    if not path:
        return {}
    import yaml

    path = Path(path)
    try:
        root = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(path, f"cannot read the prompts file: {str(exc).splitlines()[0]}",
                         field="judges.prompts") from None
    if not isinstance(root, dict) or not root:
        raise InputError(path, "must be an object of purpose -> system prompt", field="judges.prompts")
    out = {}
    for purpose, value in root.items():
        text = value.get("system") if isinstance(value, dict) else value
        if not isinstance(text, str) or not text.strip():
            raise InputError(path, "must be a non-empty text (or {system: text})", field=str(purpose))
        out[str(purpose)] = text
    return out


def check_keys(specs: list[JudgeSpec]) -> None:
    """Every judge's API key variable is set; one InputError naming all the missing ones otherwise."""
    missing = [(s.name, env) for s in specs if (env := s.config.api_key_env) and not os.environ.get(env)]
    if missing:
        names = ", ".join(f"{env} (judge {name})" for name, env in missing)
        raise InputError("config", f"environment variable(s) not set: {names}",
                         field="judges.pool." + ",".join(name for name, _ in missing) + ".api_key_env")


USAGE_COUNTS = ("requests", "cached", "prompt_tokens", "completion_tokens")
"""The counts of a judge's usage record."""


@dataclass
class JudgeUsage:
    """A judge's requests sent and replies served from the cache, and the tokens of the requests sent."""

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Mapping[str, object]) -> None:
        """Add the counts of another usage record (e.g. one read from an earlier run's output)."""
        for key in USAGE_COUNTS:
            value = other.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(self, key, getattr(self, key) + value)

    def to_json(self, spec: JudgeSpec) -> JsonObject:
        """The counts with the model and the cost in USD (null when the judge has no prices)."""
        cost = None
        if spec.price_input is not None and spec.price_output is not None:
            cost = (self.prompt_tokens * spec.price_input + self.completion_tokens * spec.price_output) / 1e6
        return {"model": spec.identity["model"], "requests": self.requests, "cached": self.cached,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "cost_usd": cost}


class JudgePool:
    """The judges of a run behind the reply cache; use `async with` to close the drivers at the end."""

    def __init__(self, specs: list[JudgeSpec], cache: ReplyCache, max_requests: int = Judges.max_requests,
                 prompts: Mapping[str, str] | None = None) -> None:
        self.specs = specs
        self.cache = cache
        self.usage = {s.name: JudgeUsage() for s in specs}
        self._limits = {s.name: asyncio.Semaphore(max_requests) for s in specs}
        self._drivers: dict[str, ModelDriver] = {}
        self._images = ImageAttacher()
        self.prompts = dict(prompts or {})

    @classmethod
    def of(cls, judges: Judges, cache_dir: str | None, specs: list[JudgeSpec]) -> JudgePool:
        """A pool of these judges as the judge app's settings set it up: its reply cache (``cache_dir``), the
        requests each judge has in flight (``judges.max_requests``) and the prompts file ``judges.prompts``."""
        return cls(specs, ReplyCache(cache_dir), judges.max_requests, read_prompts(judges.prompts))

    def rubric(self, rubric: Rubric) -> Rubric:
        """The rubric the judges are asked with: the pool's own prompt for its purpose (versioned by
        the text's digest), else the rubric as it is."""
        text = self.prompts.get(rubric.purpose)
        if text is None:
            return rubric
        return dataclasses.replace(rubric, system=text, version=f"file-{digest(text)[:12]}")

    async def __aenter__(self) -> JudgePool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def usage_totals(self, before: JsonMapping) -> JsonObject:
        """Each judge's usage of this run added to an earlier run's (`before`: judge name -> counts),
        with its model and cost."""
        totals: JsonObject = {}
        for spec in self.specs:
            total = JudgeUsage()
            earlier = before.get(spec.name)
            total.add(earlier if isinstance(earlier, dict) else {})
            total.add(vars(self.usage[spec.name]))
            totals[spec.name] = total.to_json(spec)
        return totals

    def for_task(self, images: TaskImages) -> TaskJudges:
        """The pool as one task's questions ask it: the images they name read by that task's rule."""
        return TaskJudges(self, images)

    async def ask(self, spec: JudgeSpec, question: Question, attempt: int, *, cached_only: bool = False,
                  images: TaskImages | None = None) -> str | None:
        """The judge's reply to a question (attempt 1, 2, ...): from the cache, else from its driver
        (None instead with cached_only), shown the images its question names that the task's rule
        `images` admits (rollout.judges.images; without one, none). A driver failure that outlived its
        retries raises JudgeFailure naming the judge (nothing is cached)."""
        rubric = self.rubric(question.rubric)
        paths = list(dict.fromkeys(named_images(question.payload) + list(question.images)))
        rule = images if images is not None else TaskImages()
        shown = await asyncio.to_thread(rule.parts, paths) if paths and spec.config.images else []
        key = reply_key(spec.identity, rubric, shown_digest(question.payload_digest, shown), attempt)
        usage = self.usage[spec.name]
        hit = self.cache.get(key)
        if hit is not None and isinstance(reply := hit["reply"], str):
            usage.cached += 1
            return reply
        if cached_only:
            return None
        async with self._limits[spec.name]:
            try:
                messages = rubric.messages(question.payload)
                if paths and spec.config.images:
                    messages = await asyncio.to_thread(self._images.attach, messages, paths, rule)
                completion = await self._driver(spec).complete(messages)
            except ModelError as exc:
                raise JudgeFailure(f"judge {spec.name}: {exc}") from None
        usage.requests += 1
        usage.prompt_tokens += completion.usage.get("prompt_tokens", 0)
        usage.completion_tokens += completion.usage.get("completion_tokens", 0)
        self.cache.put({"key": key, "judge": spec.name, "model": spec.identity["model"],
                        "purpose": rubric.purpose, "version": rubric.version, "attempt": attempt,
                        "reply": completion.content, "usage": dict(completion.usage)})
        return completion.content

    def _driver(self, spec: JudgeSpec) -> ModelDriver:
        """The judge's driver, built on its first request (its key is looked up only then)."""
        driver = self._drivers.get(spec.name)
        if driver is None:
            env = spec.config.api_key_env
            if env and not os.environ.get(env):
                raise InputError("config", f"environment variable {env} is not set (the key of judge {spec.name})",
                                 field=f"judges.pool.{spec.name}.api_key_env")
            driver = self._drivers[spec.name] = build_driver(spec.config)
        return driver

    async def aclose(self) -> None:
        """Close every driver built."""
        drivers, self._drivers = list(self._drivers.values()), {}
        await asyncio.gather(*(d.aclose() for d in drivers))


class TaskJudges:
    """A pool as the questions of one task ask it (what its evaluator gets as ``context.pool``): the
    pool's judges, each question shown the images the task's rule admits."""

    def __init__(self, pool: JudgePool, images: TaskImages) -> None:
        self.pool = pool
        self.images = images

    @property
    def specs(self) -> list[JudgeSpec]:
        """The pool's judges."""
        return self.pool.specs

    def rubric(self, rubric: Rubric) -> Rubric:
        """The rubric the judges are asked with (JudgePool.rubric)."""
        return self.pool.rubric(rubric)

    async def ask(self, spec: JudgeSpec, question: Question, attempt: int, *, cached_only: bool = False) -> str | None:
        """The judge's reply to one of the task's questions (JudgePool.ask with the task's images)."""
        return await self.pool.ask(spec, question, attempt, cached_only=cached_only, images=self.images)
