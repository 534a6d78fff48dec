"""The invented tool catalogue: word lists, "server/tool" -> argument generator, and call results."""

from __future__ import annotations

from collections.abc import Callable

from engine.contract import JsonObject
from engine.synthetic.draws import _copy_json, _Draws

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


def _location(city: tuple[str, str, str, float, float], d: _Draws) -> JsonObject:
    return {"lat": round(city[3] + d.uniform(-0.02, 0.02), 4), "lng": round(city[4] + d.uniform(-0.02, 0.02), 4)}


def _expression(d: _Draws) -> str:
    a, b, c = d.randint(2, 999), d.uniform(0.5, 99.0), d.randint(1, 50)
    return d.pick((f"{a} * {b:.2f} + {c}", f"({a} + {c}) / {b:.2f}", f"{a} * {c} - {b:.2f}",
                   f"sum([{a}, {c}, {b:.2f}])"))


# --------------------------------------------------------------------------
# Tool catalogue: "server/tool" -> argument generator (None: no arguments key)
# --------------------------------------------------------------------------

_ArgGen = Callable[[_Draws], "JsonObject | None"]

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
    "maps/place_details": lambda d: {
        "place_id": "pl_" + d.hexid(10), "fields": d.sample(_PLACE_FIELDS, d.randint(2, 4))},
    "maps/directions": lambda d: {
        "origin": f"{d.pick(_LANDMARKS)}, {d.pick(_CITIES)[0]}", "destination": d.pick(_LANDMARKS),
        "mode": d.pick(_TRAVEL_MODES)},
    "maps/distance_matrix": lambda d: {
        "origins": d.sample(_LANDMARKS, d.randint(1, 2)), "destinations": d.sample(_LANDMARKS, d.randint(2, 3)),
        "mode": d.pick(_TRAVEL_MODES)},
    "weather/get_forecast": lambda d: {
        "city": d.pick(_CITIES)[0], "days": d.randint(1, 10), "units": d.pick(("metric", "imperial"))},
    "weather/air_quality": lambda d: {
        "location": _location(d.pick(_CITIES), d), "pollutants": d.sample(("pm25", "pm10", "o3", "no2"), 2)},
    "weather/list_stations": lambda d: None,
    "flights/search": lambda d: {
        "origin": d.pick(_CITIES)[2], "destination": d.pick(_CITIES)[2], "date": _date(d, 2025, 2026),
        "passengers": {"adults": d.randint(1, 3), "children": d.randint(0, 2)},
        "cabin": d.pick(("economy", "economy", "premium_economy", "business"))},
    "arxiv/search": lambda d: {
        "query": d.pick(_PAPER_TOPICS), "max_results": d.randint(3, 10),
        "sort_by": d.pick(("relevance", "submittedDate"))},
    "arxiv/read_paper": lambda d: {
        "paper_id": f"{d.randint(19, 25)}{d.randint(1, 12):02d}.{d.randint(10000, 99999)}",
        "sections": d.sample(_PAPER_SECTIONS, d.randint(1, 3))},
    "scholar/citations": lambda d: {
        "paper_id": f"{d.randint(19, 25)}{d.randint(1, 12):02d}.{d.randint(10000, 99999)}", "limit": d.randint(5, 20)},
    "notes/write": lambda d: {
        "title": f"Notes on {d.pick(_PAPER_TOPICS)}",
        "content": f"Key points: {d.pick(_DRIFT_WORDS)} {d.pick(_DRIFT_WORDS)}.",
        "tags": d.sample(("reading", "todo", "summary", "ml", "travel", "health"), d.randint(1, 3))},
    "crypto/get_price": lambda d: {"symbols": d.sample(_CRYPTO, d.randint(1, 4)), "vs_currency": d.pick(_FIAT)},
    "crypto/market_chart": lambda d: {
        "symbol": d.pick(_CRYPTO), "days": d.pick((1, 7, 14, 30, 90, 365)), "interval": d.pick(("hourly", "daily"))},
    "crypto/list_markets": lambda d: None,
    "news/search": lambda d: {
        "query": d.pick((d.pick(_CRYPTO), d.pick(_TICKERS), d.pick(_CONDITIONS))) + " "
        + d.pick(("news", "outlook", "analysis")),
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
        "chart": {"type": d.pick(_CHART_TYPES), "range": f"A1:{d.pick('BCD')}{d.randint(6, 30)}",
                  "title": d.pick(_CHART_TITLES)}},
    "calculator/evaluate": lambda d: {"expression": _expression(d)},
    "images/info": lambda d: {
        "path": f"inputs/{d.pick(_IMAGE_SUBJECTS).replace(' ', '_')}_{d.randint(1, 9999):04d}.jpg"},
    "images/crop": lambda d: {
        "path": f"inputs/{d.pick(_IMAGE_SUBJECTS).replace(' ', '_')}_{d.randint(1, 9999):04d}.jpg",
        "box": {"x": d.randint(0, 800), "y": d.randint(0, 600), "width": d.randint(100, 1200),
                "height": d.randint(100, 900)}},
    "images/resize": lambda d: {
        "path": f"outputs/edit_{d.randint(1, 9999):04d}.png", "width": d.pick((256, 512, 640, 800, 1024, 1920)),
        "height": d.pick((256, 480, 512, 600, 768, 1080)), "keep_aspect": d.u() < 0.7},
    "images/apply_filter": lambda d: {
        "path": f"outputs/edit_{d.randint(1, 9999):04d}.png", "filter": d.pick(_IMAGE_FILTERS),
        "strength": round(d.uniform(0.1, 1.0), 2)},
    "images/ocr": lambda d: {"path": f"outputs/edit_{d.randint(1, 9999):04d}.png", "lang": d.pick(_OCR_LANGS)},
    "images/list_filters": lambda d: None,
    "movies/search": lambda d: {"title": d.pick(_MOVIES), "year": d.randint(1995, 2025)},
    "movies/details": lambda d: {
        "movie_id": d.randint(1000, 999999), "append": d.sample(_MOVIE_APPENDS, d.randint(1, 3))},
    "movies/showtimes": lambda d: {
        "movie_id": d.randint(1000, 999999), "city": d.pick(_CITIES)[0], "date": _date(d, 2025, 2025)},
    "movies/reviews": lambda d: {
        "movie_id": d.randint(1000, 999999), "page": d.randint(1, 3), "language": d.pick(_NEWS_LANGS)},
    "nutrition/search_food": lambda d: {
        "query": d.pick(_FOODS), "brand": d.pick(_FOOD_BRANDS), "page_size": d.randint(3, 10)},
    "nutrition/food_details": lambda d: {
        "fdc_id": d.randint(100000, 2999999), "nutrients": d.sample(_NUTRIENTS, d.randint(2, 5))},
    "nutrition/recipe_analysis": lambda d: {
        "title": f"{d.pick(_FOODS)} bowl", "servings": d.randint(1, 6),
        "ingredients": [{"name": f, "quantity": d.randint(1, 300), "unit": d.pick(_UNITS)}
                        for f in d.sample(_FOODS, d.randint(2, 4))]},
    "stocks/quote": lambda d: {"symbol": d.pick(_TICKERS)},
    "stocks/history": lambda d: {
        "symbol": d.pick(_TICKERS), "start": _date(d, 2022, 2023), "end": _date(d, 2024, 2025),
        "interval": d.pick(_INTERVALS)},
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


def _call(d: _Draws, tool: str, /, **fixed: object) -> JsonObject:
    args = _TOOLS[tool](d)
    if args is None:
        return {"name": tool}
    args.update({k: _copy_json(v) for k, v in fixed.items()})
    return {"name": tool, "arguments": args}
