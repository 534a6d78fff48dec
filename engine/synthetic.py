"""Deterministic synthetic M3-Bench trajectories.

An invented catalogue of MCP-style tools ("server/tool") and task families is
used to build reference (ground-truth) trajectories; an :class:`ErrorProfile`
then perturbs them into prediction trajectories with controlled error rates.
Everything is driven by seeded :class:`numpy.random.Generator` instances, so a
given seed always yields the same data.
"""

from __future__ import annotations

import gc
import json
import marshal
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, fields
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from engine.contract import atomic_write_bytes

__all__ = [
    "ErrorProfile",
    "PROFILES",
    "make_reference",
    "perturb",
    "demo_models",
    "write_demo",
    "scale_predictions",
]

# Stream tags keep reference generation and perturbation on distinct streams
# even when called with the same seed.
_REFERENCE_STREAM = 0x5EF
_PERTURB_STREAM = 0x9E7


def _uniform_chunks(rng: np.random.Generator) -> Iterator[list[float]]:
    while True:
        yield rng.random(4096).tolist()


class _Draws:
    """Cheap scalar draws from a Generator: ``u()`` steps a C-level iterator over bulk draws."""

    __slots__ = ("u",)

    def __init__(self, rng: np.random.Generator) -> None:
        self.u: Callable[[], float] = chain.from_iterable(_uniform_chunks(rng)).__next__

    def below(self, n: int) -> int:
        """Uniform integer in [0, n); u() < 1 keeps int(u() * n) below n."""
        return int(self.u() * n)

    def randint(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi] (inclusive)."""
        return lo + self.below(hi - lo + 1)

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.u()

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.u() * len(seq))]

    def sample(self, seq: Sequence[Any], k: int) -> list[Any]:
        """k distinct elements of seq, in random order."""
        pool = list(seq)
        k = min(k, len(pool))
        for i in range(k):
            j = i + int(self.u() * (len(pool) - i))
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def hexid(self, digits: int = 8) -> str:
        return format(self.below(16**digits), f"0{digits}x")


# --------------------------------------------------------------------------
# Word lists (invented)
# --------------------------------------------------------------------------

# name, country, IATA code, latitude, longitude
_CITIES: tuple[tuple[str, str, str, float, float], ...] = (
    ("Zürich", "Switzerland", "ZRH", 47.3769, 8.5417),
    ("São Paulo", "Brazil", "GRU", -23.5505, -46.6333),
    ("Kraków", "Poland", "KRK", 50.0647, 19.945),
    ("Reykjavík", "Iceland", "KEF", 64.1466, -21.9426),
    ("Montréal", "Canada", "YUL", 45.5017, -73.5673),
    ("Düsseldorf", "Germany", "DUS", 51.2277, 6.7735),
    ("Málaga", "Spain", "AGP", 36.7213, -4.4214),
    ("İstanbul", "Türkiye", "IST", 41.0082, 28.9784),
    ("Chiang Mai", "Thailand", "CNX", 18.7883, 98.9853),
    ("Lisbon", "Portugal", "LIS", 38.7223, -9.1393),
    ("Seattle", "USA", "SEA", 47.6062, -122.3321),
    ("Nairobi", "Kenya", "NBO", -1.2921, 36.8219),
    ("Oaxaca", "Mexico", "OAX", 17.0732, -96.7266),
    ("Kyoto", "Japan", "KIX", 35.0116, 135.7681),
    ("Hanoi", "Vietnam", "HAN", 21.0278, 105.8342),
    ("Göteborg", "Sweden", "GOT", 57.7089, 11.9746),
    ("Edinburgh", "UK", "EDI", 55.9533, -3.1883),
    ("Auckland", "New Zealand", "AKL", -36.8485, 174.7633),
)
_LANDMARKS = (
    "old town square", "central station", "harbour front", "university campus",
    "botanical garden", "main cathedral", "city museum", "riverside market",
    "convention centre", "airport terminal 1",
)
_PLACE_TYPES = ("museum", "restaurant", "park", "café", "art_gallery", "bakery", "viewpoint", "bookstore")
_PLACE_KEYWORDS = (
    "vegan", "rooftop", "family friendly", "open late", "local crafts", "street food",
    "ramen", "flea market", "live jazz", "kid-friendly", "wheelchair accessible", "sunset view",
)
_PLACE_FIELDS = ("name", "rating", "opening_hours", "address", "phone", "price_level", "reviews", "website")
_TRAVEL_MODES = ("walking", "transit", "driving", "bicycling")

_PRODUCTS = (
    "stainless steel water bottle 32 oz", "wireless earbuds", "cast iron skillet 12 inch",
    "LED desk lamp", "yoga mat 6 mm", "mechanical keyboard", "espresso beans 1 kg",
    "crème brûlée torch", "USB-C charger 65W", "hiking backpack 40L",
    "noise-cancelling headphones", "ceramic pour-over dripper", "bamboo cutting board",
    "smart plug 4-pack", "merino wool socks", "electric kettle 1.7 L", "café au lait bowls set of 4",
)
_BRANDS = ("Northwind", "Acmeware", "Lumora", "Kestrel", "Brightlane", "Vireo", "Halcyon", "Østfold")
_MARKETPLACES = ("us", "uk", "de", "fr", "jp", "ca")
_CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "BRL")

_PAPER_TOPICS = (
    "graph neural networks for molecule property prediction", "diffusion models for audio synthesis",
    "retrieval-augmented generation evaluation", "sparse mixture of experts routing",
    "reinforcement learning from human feedback", "vision-language models for tool use",
    "federated learning with differential privacy", "protein structure prediction",
    "time-series anomaly detection", "neural radiance fields for large scenes",
    "speculative decoding for language models", "self-supervised learning for satellite imagery",
)
_PAPER_SECTIONS = ("abstract", "introduction", "method", "experiments", "related work", "conclusion")

_CRYPTO = ("BTC", "ETH", "SOL", "ADA", "DOT", "AVAX", "LINK", "XRP", "DOGE", "ATOM")
_FIAT = ("usd", "eur", "gbp", "jpy", "chf")

_CONDITIONS = (
    "type 2 diabetes", "migraine", "hypertension", "asthma", "atrial fibrillation",
    "rheumatoid arthritis", "iron deficiency anemia", "Lyme disease", "Ménière's disease", "psoriasis",
)
_DRUGS = (
    "metformin", "ibuprofen", "lisinopril", "atorvastatin", "amoxicillin", "warfarin",
    "sertraline", "levothyroxine", "omeprazole", "salbutamol", "prednisone", "apixaban",
)
_LABEL_SECTIONS = ("dosage", "contraindications", "warnings", "adverse_reactions", "interactions")

_SHEET_TOPICS = ("sales", "inventory", "budget", "attendance", "survey_results", "expenses", "payroll")
_SHEETS = ("Summary", "Data", "Q1", "Q2", "2024", "Übersicht", "Raw")
_CHART_TYPES = ("bar", "line", "pie", "scatter", "area")
_CHART_TITLES = (
    "Monthly revenue", "Stock levels by warehouse", "Spend per department", "Weekly attendance",
    "Responses by region", "Cost breakdown", "Year-over-year growth",
)

_IMAGE_FILTERS = ("grayscale", "sepia", "blur", "sharpen", "vignette", "contrast", "denoise")
_OCR_LANGS = ("eng", "deu", "fra", "jpn", "spa", "por")
_IMAGE_SUBJECTS = ("receipt", "street sign", "whiteboard", "menu", "poster", "product label", "handwritten note")

_MOVIES = (
    "The Glass Orchard", "Midnight in Valparaíso", "Iron Lantern", "Paper Comets", "Echoes of Saturn",
    "The Last Ferry", "Neon Tide", "Quiet Harbor", "Little Sparks", "Kōri no Shiro", "Seven Lighthouses",
    "A Winter in Tromsø",
)
_MOVIE_APPENDS = ("credits", "videos", "keywords", "release_dates", "images", "similar")

_FOODS = (
    "oat milk", "greek yogurt", "quinoa", "avocado", "dark chocolate 70%", "almond butter",
    "phở bò", "falafel wrap", "kimchi", "lentil soup", "jalapeño poppers", "brown rice", "tofu",
)
_FOOD_BRANDS = ("", "", "Green Valley", "Nordic Farm", "Sunrise", "Maison Dupré")
_NUTRIENTS = ("protein", "fat", "carbohydrate", "fiber", "sodium", "sugar", "calories", "iron")
_UNITS = ("g", "cup", "tbsp", "piece", "ml")

_TICKERS = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "SAP", "TM", "ASML", "NFLX", "SHOP", "ADBE", "INTC")
_INTERVALS = ("1d", "1wk", "1mo")
_STATEMENTS = ("income", "balance", "cashflow")
_NEWS_LANGS = ("en", "en", "de", "es", "fr", "ja")

# Generic vocabulary used when arguments drift.
_DRIFT_WORDS = (
    "best", "cheap", "new", "official", "near", "latest", "review", "top", "2024", "guide",
    "compare", "price", "open", "mini", "pro", "deluxe", "café", "über", "naïve", "local",
    "premium", "fast", "quiet", "large", "small", "summary", "details", "today",
)


def _date(d: _Draws, year_lo: int = 2023, year_hi: int = 2025) -> str:
    return f"{d.randint(year_lo, year_hi)}-{d.randint(1, 12):02d}-{d.randint(1, 28):02d}"


def _location(city: tuple[str, str, str, float, float], d: _Draws) -> dict[str, float]:
    return {"lat": round(city[3] + d.uniform(-0.02, 0.02), 4), "lng": round(city[4] + d.uniform(-0.02, 0.02), 4)}


def _expression(d: _Draws) -> str:
    a, b, c = d.randint(2, 999), d.uniform(0.5, 99.0), d.randint(1, 50)
    return d.pick((f"{a} * {b:.2f} + {c}", f"({a} + {c}) / {b:.2f}", f"{a} * {c} - {b:.2f}", f"sum([{a}, {c}, {b:.2f}])"))


# --------------------------------------------------------------------------
# Tool catalogue: "server/tool" -> argument generator (None: no arguments key)
# --------------------------------------------------------------------------

_ArgGen = Callable[[_Draws], "dict[str, Any] | None"]

_TOOLS: dict[str, _ArgGen] = {
    "shop/search_products": lambda d: {
        "keywords": f"{d.pick(_BRANDS)} {d.pick(_PRODUCTS)}", "n": d.randint(3, 10),
        "page": 1 + (d.u() < 0.15), "marketplace": d.pick(_MARKETPLACES)},
    "shop/get_product": lambda d: {"product_id": "B0" + d.hexid(8).upper(), "marketplace": d.pick(_MARKETPLACES)},
    "shop/get_reviews": lambda d: {
        "product_id": "B0" + d.hexid(8).upper(), "sort": d.pick(("recent", "helpful")), "limit": d.randint(5, 20)},
    "currency/convert": lambda d: {
        "amount": round(d.uniform(5, 900), 2), "from": d.pick(_CURRENCIES), "to": d.pick(_CURRENCIES)},
    "maps/geocode": lambda d: {"address": f"{d.pick(_LANDMARKS)}, {d.pick(_CITIES)[0]}"},
    "maps/places_nearby": lambda d: {
        "location": _location(d.pick(_CITIES), d), "radius": d.pick((500, 1000, 1500, 2000, 5000)),
        "type": d.pick(_PLACE_TYPES), "keyword": d.pick(_PLACE_KEYWORDS)},
    "maps/place_details": lambda d: {"place_id": "pl_" + d.hexid(10), "fields": d.sample(_PLACE_FIELDS, d.randint(2, 4))},
    "maps/directions": lambda d: {
        "origin": f"{d.pick(_LANDMARKS)}, {d.pick(_CITIES)[0]}", "destination": d.pick(_LANDMARKS),
        "mode": d.pick(_TRAVEL_MODES)},
    "maps/distance_matrix": lambda d: {
        "origins": d.sample(_LANDMARKS, d.randint(1, 2)), "destinations": d.sample(_LANDMARKS, d.randint(2, 3)),
        "mode": d.pick(_TRAVEL_MODES)},
    "weather/get_forecast": lambda d: {
        "city": d.pick(_CITIES)[0], "days": d.randint(1, 10), "units": d.pick(("metric", "imperial"))},
    "weather/air_quality": lambda d: {"location": _location(d.pick(_CITIES), d), "pollutants": d.sample(("pm25", "pm10", "o3", "no2"), 2)},
    "weather/list_stations": lambda d: None,
    "flights/search": lambda d: {
        "origin": d.pick(_CITIES)[2], "destination": d.pick(_CITIES)[2], "date": _date(d, 2025, 2026),
        "passengers": {"adults": d.randint(1, 3), "children": d.randint(0, 2)},
        "cabin": d.pick(("economy", "economy", "premium_economy", "business"))},
    "arxiv/search": lambda d: {
        "query": d.pick(_PAPER_TOPICS), "max_results": d.randint(3, 10), "sort_by": d.pick(("relevance", "submittedDate"))},
    "arxiv/read_paper": lambda d: {
        "paper_id": f"{d.randint(19, 25)}{d.randint(1, 12):02d}.{d.randint(10000, 99999)}",
        "sections": d.sample(_PAPER_SECTIONS, d.randint(1, 3))},
    "scholar/citations": lambda d: {
        "paper_id": f"{d.randint(19, 25)}{d.randint(1, 12):02d}.{d.randint(10000, 99999)}", "limit": d.randint(5, 20)},
    "notes/write": lambda d: {
        "title": f"Notes on {d.pick(_PAPER_TOPICS)}", "content": f"Key points: {d.pick(_DRIFT_WORDS)} {d.pick(_DRIFT_WORDS)}.",
        "tags": d.sample(("reading", "todo", "summary", "ml", "travel", "health"), d.randint(1, 3))},
    "crypto/get_price": lambda d: {"symbols": d.sample(_CRYPTO, d.randint(1, 4)), "vs_currency": d.pick(_FIAT)},
    "crypto/market_chart": lambda d: {
        "symbol": d.pick(_CRYPTO), "days": d.pick((1, 7, 14, 30, 90, 365)), "interval": d.pick(("hourly", "daily"))},
    "crypto/list_markets": lambda d: None,
    "news/search": lambda d: {
        "query": d.pick((d.pick(_CRYPTO), d.pick(_TICKERS), d.pick(_CONDITIONS))) + " " + d.pick(("news", "outlook", "analysis")),
        "from_date": _date(d), "language": d.pick(_NEWS_LANGS), "page_size": d.randint(5, 20)},
    "pubmed/search": lambda d: {
        "term": f"{d.pick(_CONDITIONS)} {d.pick(('treatment', 'diagnosis', 'risk factors', 'guidelines'))}",
        "max_results": d.randint(5, 20), "date_range": {"from": _date(d, 2015, 2020), "to": _date(d, 2023, 2025)}},
    "pubmed/fetch_abstract": lambda d: {"pmid": str(d.randint(30000000, 39999999))},
    "drugs/interactions": lambda d: {"drugs": d.sample(_DRUGS, d.randint(2, 3))},
    "drugs/label": lambda d: {"name": d.pick(_DRUGS), "section": d.pick(_LABEL_SECTIONS)},
    "excel/list_workbooks": lambda d: None,
    "excel/read_sheet": lambda d: {
        "path": f"reports/{d.pick(_SHEET_TOPICS)}_{d.randint(2021, 2025)}.xlsx", "sheet": d.pick(_SHEETS),
        "range": f"A1:{d.pick('CDEFGH')}{d.randint(10, 60)}"},
    "excel/write_sheet": lambda d: {
        "path": f"reports/{d.pick(_SHEET_TOPICS)}_{d.randint(2021, 2025)}.xlsx", "sheet": d.pick(_SHEETS),
        "cells": [{"ref": f"{d.pick('ABCDE')}{d.randint(1, 40)}",
                   "value": round(d.uniform(0, 5000), 2) if d.u() < 0.7 else d.pick(_CHART_TITLES)}
                  for _ in range(d.randint(1, 3))]},
    "excel/create_chart": lambda d: {
        "path": f"reports/{d.pick(_SHEET_TOPICS)}_{d.randint(2021, 2025)}.xlsx", "sheet": d.pick(_SHEETS),
        "chart": {"type": d.pick(_CHART_TYPES), "range": f"A1:{d.pick('BCD')}{d.randint(6, 30)}", "title": d.pick(_CHART_TITLES)}},
    "calculator/evaluate": lambda d: {"expression": _expression(d)},
    "images/info": lambda d: {"path": f"inputs/{d.pick(_IMAGE_SUBJECTS).replace(' ', '_')}_{d.randint(1, 9999):04d}.jpg"},
    "images/crop": lambda d: {
        "path": f"inputs/{d.pick(_IMAGE_SUBJECTS).replace(' ', '_')}_{d.randint(1, 9999):04d}.jpg",
        "box": {"x": d.randint(0, 800), "y": d.randint(0, 600), "width": d.randint(100, 1200), "height": d.randint(100, 900)}},
    "images/resize": lambda d: {
        "path": f"outputs/edit_{d.randint(1, 9999):04d}.png", "width": d.pick((256, 512, 640, 800, 1024, 1920)),
        "height": d.pick((256, 480, 512, 600, 768, 1080)), "keep_aspect": d.u() < 0.7},
    "images/apply_filter": lambda d: {
        "path": f"outputs/edit_{d.randint(1, 9999):04d}.png", "filter": d.pick(_IMAGE_FILTERS),
        "strength": round(d.uniform(0.1, 1.0), 2)},
    "images/ocr": lambda d: {"path": f"outputs/edit_{d.randint(1, 9999):04d}.png", "lang": d.pick(_OCR_LANGS)},
    "images/list_filters": lambda d: None,
    "movies/search": lambda d: {"title": d.pick(_MOVIES), "year": d.randint(1995, 2025)},
    "movies/details": lambda d: {"movie_id": d.randint(1000, 999999), "append": d.sample(_MOVIE_APPENDS, d.randint(1, 3))},
    "movies/showtimes": lambda d: {"movie_id": d.randint(1000, 999999), "city": d.pick(_CITIES)[0], "date": _date(d, 2025, 2025)},
    "movies/reviews": lambda d: {"movie_id": d.randint(1000, 999999), "page": d.randint(1, 3), "language": d.pick(_NEWS_LANGS)},
    "nutrition/search_food": lambda d: {"query": d.pick(_FOODS), "brand": d.pick(_FOOD_BRANDS), "page_size": d.randint(3, 10)},
    "nutrition/food_details": lambda d: {"fdc_id": d.randint(100000, 2999999), "nutrients": d.sample(_NUTRIENTS, d.randint(2, 5))},
    "nutrition/recipe_analysis": lambda d: {
        "title": f"{d.pick(_FOODS)} bowl", "servings": d.randint(1, 6),
        "ingredients": [{"name": f, "quantity": d.randint(1, 300), "unit": d.pick(_UNITS)} for f in d.sample(_FOODS, d.randint(2, 4))]},
    "stocks/quote": lambda d: {"symbol": d.pick(_TICKERS)},
    "stocks/history": lambda d: {
        "symbol": d.pick(_TICKERS), "start": _date(d, 2022, 2023), "end": _date(d, 2024, 2025), "interval": d.pick(_INTERVALS)},
    "stocks/financials": lambda d: {
        "symbol": d.pick(_TICKERS), "statement": d.pick(_STATEMENTS), "period": d.pick(("annual", "quarterly"))},
}

_TOOL_NAMES: tuple[str, ...] = tuple(_TOOLS)
_SAME_SERVER: dict[str, tuple[str, ...]] = {
    name: tuple(t for t in _TOOL_NAMES if t != name and t.split("/")[0] == name.split("/")[0]) for name in _TOOL_NAMES
}
_OTHER_SERVER: dict[str, tuple[str, ...]] = {
    name: tuple(t for t in _TOOL_NAMES if t.split("/")[0] != name.split("/")[0]) for name in _TOOL_NAMES
}

_OK_RESULTS = (
    '{"status": "ok", "count": 3}', '{"status": "ok", "count": 5}', '{"status": "ok", "count": 1}',
    '{"status": "ok", "items": []}', '{"status": "ok", "truncated": true}', '{"status": "ok"}',
    "Found 4 matching entries.", "Done.", "Request completed in 0.8 s.", "Résultat: 2 éléments.",
)
_ERROR_RESULTS = (
    "Error: invalid arguments for this tool.", "Error: rate limit exceeded, retry later.",
    '{"status": "error", "code": 404}', "Error: unknown parameter.",
)


def _call(d: _Draws, tool: str, /, **fixed: Any) -> dict[str, Any]:
    args = _TOOLS[tool](d)
    if args is None:
        return {"name": tool}
    args.update({k: _copy_json(v) for k, v in fixed.items()})
    return {"name": tool, "arguments": args}


# --------------------------------------------------------------------------
# Task families: each returns (question, steps as lists of calls, final reply)
# --------------------------------------------------------------------------

_Workflow = tuple[str, list[list[dict[str, Any]]], str]


def _wf_itemsprice(d: _Draws) -> _Workflow:
    items = d.sample(_PRODUCTS, d.randint(1, 4) if d.u() < 0.9 else d.randint(5, 10))
    mkt = d.pick(_MARKETPLACES)
    steps = [
        [_call(d, "shop/search_products", keywords=it, marketplace=mkt, page=1) for it in items],
        [_call(d, "shop/get_product", marketplace=mkt) for _ in items],
    ]
    if d.u() < 0.3:
        steps.append([_call(d, "shop/get_reviews") for _ in range(d.randint(1, 2))])
    total = round(d.uniform(15, 600), 2)
    cur = "USD"
    if d.u() < 0.5:
        cur = d.pick(_CURRENCIES[1:])
        steps.append([_call(d, "currency/convert", amount=total, to=cur, **{"from": "USD"})])
    question = f"What is the cheapest price for {', '.join(items)} on the {mkt} store, and the total in {cur}?"
    return question, steps, f"The cheapest combination costs about {total:.2f} USD in total ({cur})."


def _wf_attraction(d: _Draws) -> _Workflow:
    city = d.pick(_CITIES)
    loc = _location(city, d)
    types = d.sample(_PLACE_TYPES, d.randint(1, 3))
    steps = [
        [_call(d, "maps/geocode", address=f"{d.pick(_LANDMARKS)}, {city[0]}")],
        [_call(d, "maps/places_nearby", location=loc, type=t) for t in types],
        [_call(d, "maps/place_details") for _ in range(d.randint(1, 3))],
    ]
    if d.u() < 0.4:
        steps.append([_call(d, "maps/directions", origin=f"{d.pick(_LANDMARKS)}, {city[0]}")])
    question = f"Which {' or '.join(types)} near the {d.pick(_LANDMARKS)} in {city[0]} is best rated and open now?"
    return question, steps, f"The best option in {city[0]} is rated {d.uniform(4.0, 4.9):.1f} and open until {d.randint(17, 23)}:00."


def _wf_weather_trip(d: _Draws) -> _Workflow:
    home, dest = d.sample(_CITIES, 2)
    days = d.randint(2, 7)
    steps = [
        [_call(d, "weather/get_forecast", city=dest[0], days=days), _call(d, "maps/geocode", address=f"{d.pick(_LANDMARKS)}, {dest[0]}")],
        [_call(d, "weather/air_quality", location=_location(dest, d)), _call(d, "flights/search", origin=home[2], destination=dest[2])],
    ]
    if d.u() < 0.5:
        steps.append([_call(d, "currency/convert", **{"from": "EUR"})] if d.u() < 0.5 else [_call(d, "notes/write", tags=["travel"])])
    question = f"I'm flying from {home[0]} to {dest[0]} for {days} days. What weather should I expect, and which flight is cheapest?"
    return question, steps, f"Expect {d.randint(-5, 34)}°C in {dest[0]}; the cheapest flight is {d.uniform(80, 1400):.0f} EUR."


def _wf_paper_research(d: _Draws) -> _Workflow:
    topics = d.sample(_PAPER_TOPICS, d.randint(1, 2))
    steps = [
        [_call(d, "arxiv/search", query=t) for t in topics],
        [_call(d, "arxiv/read_paper") for _ in range(d.randint(1, 3))],
    ]
    if d.u() < 0.6:
        steps.append([_call(d, "scholar/citations") for _ in range(d.randint(1, 2))])
        if d.u() < 0.4:
            steps.append([_call(d, "arxiv/read_paper", sections=["abstract"]) for _ in range(d.randint(1, 4))])
    if d.u() < 0.4:
        steps.append([_call(d, "notes/write", title=f"Notes on {topics[0]}")])
    question = f"Find recent papers on {' and '.join(topics)} and summarise their main contributions."
    return question, steps, f"I found {d.randint(2, 9)} relevant papers; the most cited proposes a new benchmark for {topics[0]}."


def _wf_crypto(d: _Draws) -> _Workflow:
    coins = d.sample(_CRYPTO, d.randint(1, 3))
    first = [_call(d, "crypto/get_price", symbols=coins)]
    if d.u() < 0.35:
        first.insert(0, _call(d, "crypto/list_markets"))
    steps = [first, [_call(d, "crypto/market_chart", symbol=c) for c in coins]]
    if d.u() < 0.5:
        steps.append([_call(d, "news/search", query=f"{coins[0]} news")])
    if d.u() < 0.3:
        steps.append([_call(d, "calculator/evaluate")])
    question = f"How have {', '.join(coins)} performed this month, and what is driving the price?"
    return question, steps, f"{coins[0]} is {d.pick(('up', 'down'))} {d.uniform(0.5, 25):.1f}% over 30 days."


def _wf_medical(d: _Draws) -> _Workflow:
    cond = d.pick(_CONDITIONS)
    drugs = d.sample(_DRUGS, d.randint(2, 3))
    third = [_call(d, "drugs/interactions", drugs=drugs)]
    if d.u() < 0.5:
        third.append(_call(d, "drugs/label", name=drugs[0]))
    steps = [
        [_call(d, "pubmed/search", term=f"{cond} treatment")],
        [_call(d, "pubmed/fetch_abstract") for _ in range(d.randint(1, 3))],
        third,
    ]
    question = f"What does recent literature say about treating {cond}, and do {' and '.join(drugs)} interact?"
    return question, steps, f"Recent trials support first-line therapy for {cond}; {drugs[0]} and {drugs[1]} have a {d.pick(('minor', 'moderate', 'major'))} interaction."


def _wf_spreadsheet_report(d: _Draws) -> _Workflow:
    path = f"reports/{d.pick(_SHEET_TOPICS)}_{d.randint(2021, 2025)}.xlsx"
    first = [_call(d, "excel/read_sheet", path=path) for _ in range(d.randint(1, 2))]
    if d.u() < 0.4:
        first.insert(0, _call(d, "excel/list_workbooks"))
    steps = [first]
    if d.u() < 0.5:
        steps.append([_call(d, "calculator/evaluate")])
    steps.append([_call(d, "excel/write_sheet", path=path, sheet="Summary")])
    if d.u() < 0.6:
        steps.append([_call(d, "excel/create_chart", path=path, sheet="Summary")])
    if d.u() < 0.25:
        steps.append([_call(d, "excel/read_sheet", path=path, sheet="Summary")])
    question = f"Summarise the figures in {path} into a Summary sheet and add a chart."
    return question, steps, f"The Summary sheet of {path} now holds the totals ({d.uniform(1000, 90000):.2f})."


def _wf_image_edit(d: _Draws) -> _Workflow:
    subject = d.pick(_IMAGE_SUBJECTS)
    src = f"inputs/{subject.replace(' ', '_')}_{d.randint(1, 9999):04d}.jpg"
    out = f"outputs/edit_{d.randint(1, 9999):04d}.png"
    first = [_call(d, "images/info", path=src)]
    if d.u() < 0.3:
        first.append(_call(d, "images/list_filters"))
    steps = [first, [_call(d, "images/crop", path=src)]]
    third = []
    if d.u() < 0.7:
        third.append(_call(d, "images/resize", path=out))
    if d.u() < 0.6 or not third:
        third.append(_call(d, "images/apply_filter", path=out))
    steps.append(third)
    if d.u() < 0.4:
        steps.append([_call(d, "images/ocr", path=out)])
    question = f"Crop the {subject} in the attached photo, clean it up and tell me what it says."
    return question, steps, f"I cropped and enhanced the {subject}; it reads: \"{d.pick(_DRIFT_WORDS)} {d.pick(_DRIFT_WORDS)}\"."


def _wf_maps(d: _Draws) -> _Workflow:
    city = d.pick(_CITIES)
    spots = d.sample(_LANDMARKS, d.randint(2, 3))
    mode = d.pick(_TRAVEL_MODES)
    steps = [
        [_call(d, "maps/geocode", address=f"{s}, {city[0]}") for s in spots],
        [_call(d, "maps/distance_matrix", origins=spots[:1], destinations=spots[1:], mode=mode)],
    ]
    if d.u() < 0.7:
        steps.append([_call(d, "maps/directions", origin=f"{spots[0]}, {city[0]}", destination=s, mode=mode) for s in spots[1:]])
    question = f"In {city[0]}, how long does it take from the {spots[0]} to {' and '.join(spots[1:])} by {mode}?"
    return question, steps, f"By {mode} it takes about {d.randint(6, 75)} minutes to the farthest stop."


def _wf_movies(d: _Draws) -> _Workflow:
    titles = d.sample(_MOVIES, d.randint(1, 2))
    city = d.pick(_CITIES)[0]
    third = [_call(d, "movies/showtimes", city=city)]
    if d.u() < 0.5:
        third.append(_call(d, "movies/reviews"))
    steps = [
        [_call(d, "movies/search", title=t) for t in titles],
        [_call(d, "movies/details") for _ in titles],
        third,
    ]
    question = f"Is {' or '.join(titles)} playing in {city} this weekend, and is it any good?"
    return question, steps, f"{titles[0]} plays at {d.randint(12, 22)}:{d.pick(('00', '15', '30', '45'))} and scores {d.uniform(5.5, 8.9):.1f}/10."


def _wf_nutrition(d: _Draws) -> _Workflow:
    foods = d.sample(_FOODS, d.randint(1, 4) if d.u() < 0.85 else d.randint(5, 8))
    steps = [
        [_call(d, "nutrition/search_food", query=f) for f in foods],
        [_call(d, "nutrition/food_details") for _ in foods],
    ]
    if d.u() < 0.5:
        steps.append([_call(d, "nutrition/recipe_analysis")] if d.u() < 0.5 else [_call(d, "calculator/evaluate")])
    question = f"How much protein and fibre is in a meal of {', '.join(foods)}?"
    return question, steps, f"The meal has about {d.randint(8, 70)} g protein and {d.randint(2, 25)} g fibre."


def _wf_stocks(d: _Draws) -> _Workflow:
    tickers = d.sample(_TICKERS, d.randint(1, 3))
    second = [_call(d, "stocks/history", symbol=t) for t in tickers]
    if d.u() < 0.5:
        second.append(_call(d, "stocks/financials", symbol=tickers[0]))
    steps = [[_call(d, "stocks/quote", symbol=t) for t in tickers], second]
    if d.u() < 0.6:
        steps.append([_call(d, "calculator/evaluate")])
    if d.u() < 0.3:
        steps.append([_call(d, "news/search", query=f"{tickers[0]} outlook")])
    question = f"Compare the one-year return of {', '.join(tickers)} and explain the difference."
    return question, steps, f"{tickers[0]} returned {d.uniform(-30, 80):.1f}% over the year."


_FAMILIES: dict[str, Callable[[_Draws], _Workflow]] = {
    "itemsprice": _wf_itemsprice,
    "attraction": _wf_attraction,
    "weather_trip": _wf_weather_trip,
    "paper_research": _wf_paper_research,
    "crypto": _wf_crypto,
    "medical": _wf_medical,
    "spreadsheet_report": _wf_spreadsheet_report,
    "image_edit": _wf_image_edit,
    "maps": _wf_maps,
    "movies": _wf_movies,
    "nutrition": _wf_nutrition,
    "stocks": _wf_stocks,
}
_FAMILY_NAMES: tuple[str, ...] = tuple(_FAMILIES)


def _task(task_id: str, family: str, question: str, steps: list[list[dict[str, Any]]], final_reply: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "image": f"images/{task_id}.png",
        "type": family,
        "question": question,
        "steps": [{"step": i, "calls": calls} for i, calls in enumerate(steps, 1)],
        "num_step": len(steps),
        "max_num_concurrent": max((len(calls) for calls in steps), default=0),
        "final_reply": final_reply,
    }


def make_reference(n_tasks: int, seed: int = 0) -> list[dict]:
    """Build ``n_tasks`` ground-truth tasks (ids ``"%08d"``) from the invented catalogue."""
    if n_tasks < 0:
        raise ValueError("n_tasks must be >= 0")
    d = _Draws(np.random.default_rng([_REFERENCE_STREAM, seed]))
    tasks = []
    for i in range(n_tasks):
        family = d.pick(_FAMILY_NAMES)
        question, steps, reply = _FAMILIES[family](d)
        tasks.append(_task(f"{i:08d}", family, question, steps, reply))
    return tasks


# --------------------------------------------------------------------------
# Error profiles and perturbation
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorProfile:
    """Per-element error rates applied by :func:`perturb` (each in [0, 1]).

    Call-level rates apply to every reference call: ``drop`` removes it,
    ``extra`` adds a spurious call next to it, ``wrong_tool`` renames it,
    ``drift`` changes one argument value slightly and ``strong_drift`` replaces
    several values (``drift + strong_drift <= 1``). Step-level rates: ``split``
    cuts a multi-call step in two, ``merge`` joins a step with the previous
    one, ``swap`` exchanges two consecutive steps. ``missing_task`` omits a
    whole task from the predictions.
    """

    drop: float = 0.0
    extra: float = 0.0
    drift: float = 0.0
    strong_drift: float = 0.0
    wrong_tool: float = 0.0
    split: float = 0.0
    merge: float = 0.0
    swap: float = 0.0
    missing_task: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"ErrorProfile.{f.name} must be in [0, 1], got {value}")
        if self.drift + self.strong_drift > 1.0:
            raise ValueError("ErrorProfile.drift + strong_drift must be <= 1")


PROFILES: dict[str, ErrorProfile] = {
    "perfect": ErrorProfile(),
    "strong": ErrorProfile(drop=0.03, extra=0.03, drift=0.10, strong_drift=0.03, wrong_tool=0.02,
                           split=0.03, merge=0.03, swap=0.01, missing_task=0.005),
    "medium": ErrorProfile(drop=0.08, extra=0.08, drift=0.20, strong_drift=0.08, wrong_tool=0.06,
                           split=0.08, merge=0.08, swap=0.04, missing_task=0.02),
    "weak": ErrorProfile(drop=0.18, extra=0.15, drift=0.30, strong_drift=0.15, wrong_tool=0.12,
                         split=0.15, merge=0.15, swap=0.08, missing_task=0.05),
    "chaotic": ErrorProfile(drop=0.35, extra=0.30, drift=0.30, strong_drift=0.30, wrong_tool=0.25,
                            split=0.30, merge=0.30, swap=0.20, missing_task=0.12),
}


def _copy_json(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v) for v in value]
    return value


def _leaves(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """(container, key) pairs of every scalar, non-null value inside ``value``."""
    items = value.items() if type(value) is dict else enumerate(value)
    for k, v in items:
        if type(v) is dict or type(v) is list:
            _leaves(v, out)
        elif v is not None:
            out.append((value, k))
    return out


def _nudge(value: Any, d: _Draws) -> Any:
    """A slightly different value of the same type."""
    if type(value) is bool:
        return not value
    if type(value) is int:
        step = max(1, abs(value) // 10)
        return value + d.pick((-step, step)) * d.randint(1, 2)
    if type(value) is float:
        return round(value * (1.0 + d.pick((-1, 1)) * d.uniform(0.005, 0.05)) + d.pick((-1, 1)) * 0.001, 4)
    words = str(value).split(" ")
    choice = d.below(3)
    if choice == 0 and len(words) > 1:
        del words[d.below(len(words))]
    elif choice == 1:
        words[d.below(len(words))] = d.pick(_DRIFT_WORDS)
    else:
        words.insert(d.below(len(words) + 1), d.pick(_DRIFT_WORDS))
    new = " ".join(words)
    return new if new != value else new + " " + d.pick(_DRIFT_WORDS)


def _replace(value: Any, d: _Draws) -> Any:
    """An unrelated value of the same type."""
    if type(value) is bool:
        return d.u() < 0.5
    if type(value) is int:
        return d.randint(0, max(10, 3 * abs(value)))
    if type(value) is float:
        return round(value * d.uniform(-2.0, 3.0), 4)
    return " ".join(d.sample(_DRIFT_WORDS, d.randint(1, 3)))


def _drift(args: dict[str, Any], strong: bool, d: _Draws) -> None:
    """Perturb ``args`` in place: one value nudged, or (strong) several replaced."""
    leaves = _leaves(args, [])
    if not leaves:
        return
    if not strong:
        container, key = d.pick(leaves)
        container[key] = _nudge(container[key], d)
        return
    k = len(leaves) if len(leaves) <= 2 else d.randint(2, len(leaves))
    for container, key in d.sample(leaves, k):
        container[key] = _replace(container[key], d)


# Per-call event flags, drawn in bulk for a whole prediction file.
_DROP, _EXTRA, _WRONG, _MILD, _STRONG = 1, 2, 4, 8, 16
_CHANGED = _DROP | _WRONG | _MILD | _STRONG


def _call_events(p: ErrorProfile, rng: np.random.Generator, n: int) -> list[int]:
    events = np.zeros(n, dtype=np.int64)
    if p.drop:
        events |= np.where(rng.random(n) < p.drop, _DROP, 0)
    if p.extra:
        events |= np.where(rng.random(n) < p.extra, _EXTRA, 0)
    if p.wrong_tool:
        events |= np.where(rng.random(n) < p.wrong_tool, _WRONG, 0)
    if p.drift or p.strong_drift:
        r = rng.random(n)
        events |= np.where(r < p.strong_drift, _STRONG, np.where(r < p.strong_drift + p.drift, _MILD, 0))
    return events.tolist()


def _mutate_call(call: dict[str, Any], events: int, d: _Draws) -> dict[str, Any]:
    """A new predicted call from ``call`` with the renaming / drift in ``events``."""
    name = call["name"]
    if events & _WRONG:
        pool = _SAME_SERVER.get(name) or ()
        if not pool or d.u() < 0.5:
            pool = _OTHER_SERVER.get(name) or _TOOL_NAMES
        name = d.pick(pool)
    out: dict[str, Any] = {"name": name}
    if "arguments" in call:
        args = call["arguments"]
        if events & (_MILD | _STRONG) and type(args) is dict:
            args = _copy_json(args)
            _drift(args, bool(events & _STRONG), d)
        out["arguments"] = args
    out["result"] = d.pick(_ERROR_RESULTS) if d.u() < 0.3 else d.pick(_OK_RESULTS)
    return out


def _extra_call(call: dict[str, Any], d: _Draws) -> dict[str, Any]:
    """A spurious call: a re-issued variant of ``call`` or an unrelated tool."""
    if d.u() < 0.5 and type(call.get("arguments")) is dict:
        args = _copy_json(call["arguments"])
        _drift(args, False, d)
        extra = {"name": call["name"], "arguments": args}
    else:
        extra = _call(d, d.pick(_TOOL_NAMES))
    extra["result"] = d.pick(_OK_RESULTS)
    return extra


def _restructure(steps: list[list[dict]], p: ErrorProfile, d: _Draws) -> tuple[list[list[dict]], bool]:
    """Apply step splits, merges and swaps; also report whether anything changed."""
    changed = False
    if p.split:
        split_steps = []
        for calls in steps:
            if len(calls) > 1 and d.u() < p.split:
                cut = d.randint(1, len(calls) - 1)
                split_steps += [calls[:cut], calls[cut:]]
                changed = True
            else:
                split_steps.append(calls)
        steps = split_steps
    if p.merge and len(steps) > 1:
        merged = [steps[0]]
        for calls in steps[1:]:
            if d.u() < p.merge:
                merged[-1] = merged[-1] + calls
                changed = True
            else:
                merged.append(calls)
        steps = merged
    if p.swap:
        i = 0
        while i < len(steps) - 1:
            if d.u() < p.swap:
                steps[i], steps[i + 1] = steps[i + 1], steps[i]
                changed = True
                i += 2
            else:
                i += 1
    return steps, changed


def _perturb_copy(tasks: list[dict], n_calls: int, p: ErrorProfile, rng: np.random.Generator) -> list[dict]:
    """Turn ``tasks`` (a private deep copy of a reference with ``n_calls`` calls) into predictions in place."""
    events = _call_events(p, rng, n_calls)
    results = rng.integers(0, len(_OK_RESULTS), n_calls).tolist()
    missing = (rng.random(len(tasks)) < p.missing_task).tolist() if p.missing_task else None
    restructure = bool(p.split or p.merge or p.swap)
    d = _Draws(rng)
    ok = _OK_RESULTS
    out = []
    j = 0
    for t, task in enumerate(tasks):
        if missing is not None and missing[t]:
            j += sum(len(step["calls"]) for step in task["steps"])
            continue
        altered = False
        steps = []
        for step in task["steps"]:
            calls = []
            for call in step["calls"]:
                e = events[j]
                if not e & _CHANGED:
                    call["result"] = ok[results[j]]
                    calls.append(call)
                elif not e & _DROP:
                    calls.append(_mutate_call(call, e, d))
                if e:
                    altered = True
                    if e & _EXTRA:
                        calls.append(_extra_call(call, d))
                j += 1
            if calls:
                steps.append(calls)
        if restructure:
            steps, changed = _restructure(steps, p, d)
            altered = altered or changed
        task["steps"] = [{"step": i, "calls": calls} for i, calls in enumerate(steps, 1)]
        task["num_step"] = len(steps)
        task["max_num_concurrent"] = max(map(len, steps), default=0)
        if altered:
            reply = task.get("final_reply", "")
            task["final_reply"] = d.pick((
                reply,
                "I could not verify every detail, but: " + reply,
                "Sorry, I was unable to find all of the requested information.",
            ))
        out.append(task)
    return out


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many small containers (no cycles are created)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _count_calls(tasks: list[dict]) -> int:
    return sum(len(step["calls"]) for task in tasks for step in task["steps"])


def perturb(reference: list[dict], profile: ErrorProfile, seed: int = 0) -> list[dict]:
    """Prediction tasks derived from ``reference`` with ``profile``'s error rates.

    Missing tasks are omitted, steps are renumbered from 1, every call gets a
    ``"result"`` string. The input is never modified.
    """
    rng = np.random.default_rng([_PERTURB_STREAM, seed])
    with _gc_paused():
        return _perturb_copy(marshal.loads(marshal.dumps(reference)), _count_calls(reference), profile, rng)


# --------------------------------------------------------------------------
# Demo files and benchmark-scale predictions
# --------------------------------------------------------------------------


def demo_models() -> dict[str, ErrorProfile]:
    """The named models of the demo leaderboard, best first."""
    return {
        "demo_strong": PROFILES["strong"],
        "demo_medium": PROFILES["medium"],
        "demo_hasty": ErrorProfile(drop=0.12, extra=0.02, drift=0.15, strong_drift=0.05, wrong_tool=0.03,
                                   merge=0.6, missing_task=0.02),
        "demo_weak": PROFILES["weak"],
        "demo_chaotic": PROFILES["chaotic"],
    }


def _write_if_changed(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data)


def _dumps(tasks: list[dict]) -> bytes:
    return (json.dumps(tasks, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_demo(directory: Path, n_tasks: int = 60, seed: int = 0) -> tuple[Path, dict[str, Path]]:
    """Write ``reference.json`` and ``<model>.json`` per demo model into ``directory``.

    Files are replaced atomically and left untouched when their content is
    already identical. Returns the reference path and ``{model: path}``.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    reference = make_reference(n_tasks, seed)
    gt_path = directory / "reference.json"
    _write_if_changed(gt_path, _dumps(reference))
    paths = {}
    for name, profile in demo_models().items():
        path = directory / f"{name}.json"
        model_seed = (seed << 32) | zlib.crc32(name.encode("utf-8"))
        _write_if_changed(path, _dumps(perturb(reference, profile, model_seed)))
        paths[name] = path
    return gt_path, paths


def scale_predictions(
    reference: list[dict], n_calls: int, profile: ErrorProfile | None = None, seed: int = 0
) -> list[list[dict]]:
    """Prediction files over ``reference`` totalling about ``n_calls`` predicted calls.

    Each file is an independently seeded perturbation of the whole reference;
    the last one is cut after the task that reaches ``n_calls``. With no
    ``profile``, files cycle through the "strong", "medium", "weak" and
    "chaotic" profiles.
    """
    if n_calls <= 0:
        return []
    cycle = [profile] if profile is not None else [PROFILES[k] for k in ("strong", "medium", "weak", "chaotic")]
    ref_calls = _count_calls(reference)
    if ref_calls == 0 or all(p.missing_task == 1.0 or (p.drop == 1.0 and p.extra == 0.0) for p in cycle):
        raise ValueError("no predicted calls can be produced from this reference and profile")
    files: list[list[dict]] = []
    total = 0
    with _gc_paused():
        blob = marshal.dumps(reference)
        while total < n_calls:
            k = len(files)
            rng = np.random.default_rng([_PERTURB_STREAM, seed, k])
            tasks = _perturb_copy(marshal.loads(blob), ref_calls, cycle[k % len(cycle)], rng)
            count = _count_calls(tasks)
            if total + count > n_calls:
                for cut, task in enumerate(tasks, 1):
                    total += sum(len(step["calls"]) for step in task["steps"])
                    if total >= n_calls:
                        del tasks[cut:]
                        break
            else:
                total += count
            files.append(tasks)
    return files
