"""Task families (workflows over the catalogue) and the synthetic reference set."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.contract import JsonObject, trajectory_record
from engine.synthetic.catalogue import (
    _CITIES,
    _CONDITIONS,
    _CRYPTO,
    _CURRENCIES,
    _DRIFT_WORDS,
    _DRUGS,
    _FOODS,
    _IMAGE_SUBJECTS,
    _LANDMARKS,
    _MARKETPLACES,
    _MOVIES,
    _PAPER_TOPICS,
    _PLACE_TYPES,
    _PRODUCTS,
    _SHEET_TOPICS,
    _TICKERS,
    _TRAVEL_MODES,
    _call,
    _location,
)
from engine.synthetic.draws import _REFERENCE_STREAM, _Draws

# --------------------------------------------------------------------------
# Task families: each returns (question, steps as lists of calls, final reply)
# --------------------------------------------------------------------------

_Workflow = tuple[str, list[list[JsonObject]], str]


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
    return question, steps, (f"The best option in {city[0]} is rated {d.uniform(4.0, 4.9):.1f} "
                             f"and open until {d.randint(17, 23)}:00.")


def _wf_weather_trip(d: _Draws) -> _Workflow:
    home, dest = d.sample(_CITIES, 2)
    days = d.randint(2, 7)
    steps = [
        [_call(d, "weather/get_forecast", city=dest[0], days=days),
         _call(d, "maps/geocode", address=f"{d.pick(_LANDMARKS)}, {dest[0]}")],
        [_call(d, "weather/air_quality", location=_location(dest, d)),
         _call(d, "flights/search", origin=home[2], destination=dest[2])],
    ]
    if d.u() < 0.5:
        steps.append([_call(d, "currency/convert", **{"from": "EUR"})] if d.u() < 0.5
                     else [_call(d, "notes/write", tags=["travel"])])
    question = (f"I'm flying from {home[0]} to {dest[0]} for {days} days. What weather should I expect, "
                "and which flight is cheapest?")
    return question, steps, (f"Expect {d.randint(-5, 34)}°C in {dest[0]}; "
                             f"the cheapest flight is {d.uniform(80, 1400):.0f} EUR.")


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
    return question, steps, (f"I found {d.randint(2, 9)} relevant papers; "
                             f"the most cited proposes a new benchmark for {topics[0]}.")


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
    return question, steps, (f"Recent trials support first-line therapy for {cond}; {drugs[0]} and {drugs[1]} "
                             f"have a {d.pick(('minor', 'moderate', 'major'))} interaction.")


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
    return question, steps, (f"I cropped and enhanced the {subject}; "
                             f"it reads: \"{d.pick(_DRIFT_WORDS)} {d.pick(_DRIFT_WORDS)}\".")


def _wf_maps(d: _Draws) -> _Workflow:
    city = d.pick(_CITIES)
    spots = d.sample(_LANDMARKS, d.randint(2, 3))
    mode = d.pick(_TRAVEL_MODES)
    steps = [
        [_call(d, "maps/geocode", address=f"{s}, {city[0]}") for s in spots],
        [_call(d, "maps/distance_matrix", origins=spots[:1], destinations=spots[1:], mode=mode)],
    ]
    if d.u() < 0.7:
        steps.append([_call(d, "maps/directions", origin=f"{spots[0]}, {city[0]}", destination=s, mode=mode)
                      for s in spots[1:]])
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
    return question, steps, (f"{titles[0]} plays at {d.randint(12, 22)}:{d.pick(('00', '15', '30', '45'))} "
                             f"and scores {d.uniform(5.5, 8.9):.1f}/10.")


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


def _task(task_id: str, family: str, question: str, steps: list[list[JsonObject]],
          final_reply: str) -> JsonObject:
    return trajectory_record(task_id, steps, image=f"images/{task_id}.png", type=family, question=question,
                             final_reply=final_reply)


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
