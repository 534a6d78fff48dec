"""The runs page: every run of a run index (engine.reports.index) on one page, written as a file
(``runs.html``, opens from the file system) or served as runs land.

One row per run: its folder relative to the folder common to the runs, its time, its models folded
(how many, the best with its Average Score; each model's on demand), the set of its compared settings and
those settings, and its viewer site when built; every column sorts, a text filter and a set filter narrow
the rows, and two runs picked are shown side by side: model by model, each leaderboard column of both
(their ``leaderboard.json``, else the index's Average Scores) with the difference, when they are
comparable as the report app decides (the same settings digest, engine.reports.groups), else the
settings that keep them apart and each run's own table. The page is one file: its scripts and styles are
this package's (``static/dom.js`` then ``static/runs.js``: `RUNS_SCRIPTS`; ``static/runs.css``), its data
JSON made safe inside ``<script>`` (engine.viewer.text.js_literal), every text put in as text.

`serve_runs` serves the page on 127.0.0.1: it reads the index again whenever ``index.json`` changes (its
size or time), the page asks for the runs every few seconds and draws the new ones without a reload, and
each run's site is served below ``site/<run key>/`` from the run's ``viewer`` folder only (opened beneath
it, no link followed).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import mimetypes
import os
import threading
from pathlib import Path
from typing import TypedDict
from urllib.parse import unquote, urlsplit

from jinja2 import Environment, PackageLoader

from engine.contract import InputError, Interrupted, JsonValue, atomic_write_text
from engine.contract.beneath import Refused, read_beneath
from engine.reports.groups import COMPARED
from engine.reports.index import INDEX_FILE, SITE, best_model, entry_set, entry_settings, read_index, short_paths
from engine.viewer.text import cut, js_literal, number_or_none

PAGE = "runs.html"
STATIC = Path(__file__).with_name("static")
POLL_S = 3
"""How often a served page asks for new runs, in seconds."""
RUNS_SCRIPTS = ("dom.js", "runs.js")
"""The page's scripts, inlined in this order (runs.js uses dom.js's element helper)."""
BOARD_LIMIT = 4 * 2 ** 20
"""The largest leaderboard.json of a run that is read (bytes)."""


def run_key(run: str) -> str:
    """A run's key in the page and the server's addresses (a digest of its folder)."""
    return hashlib.sha256(run.encode("utf-8", "surrogatepass")).hexdigest()[:12]


class RunBoard(TypedDict):
    """A run's leaderboard.json as the page shows it: the columns after the model, each model's cells."""

    columns: list[str]
    rows: dict[str, list[float | None]]


class RunRow(TypedDict):
    """One run of the page: its key, folder (relative and whole), time, models with their Average Score, best
    model, set and settings, site address and leaderboard."""

    key: str
    run: str
    path: str
    time: object
    models: list[list[object]]
    best: list[object]
    set: str
    settings: object
    site: str | None
    board: RunBoard | None


class RunsData(TypedDict):
    """What the page shows (`runs_data`)."""

    index: str
    base: str
    compared: list[str]
    runs: list[RunRow]
    live: bool
    poll: int


class ServedData(RunsData, total=False):
    """The served page's data: with the ``version`` of the index it was read from."""

    version: str


def _board(run: Path) -> RunBoard | None:
    """A run's leaderboard.json as {columns, rows: {model: cells}} (numbers or None); None when absent or not
    one the reports write."""
    path = run / "leaderboard.json"
    try:
        if not path.is_file() or path.stat().st_size > BOARD_LIMIT:
            return None
        doc: JsonValue = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    columns = doc.get("columns") if isinstance(doc, dict) else None
    rows = doc.get("rows") if isinstance(doc, dict) else None
    if not isinstance(columns, list) or not isinstance(rows, list) or not columns:
        return None
    labels = [str(c) for c in columns[1:]]
    first = columns[0]
    out: dict[str, list[float | None]] = {}
    for row in rows:
        if isinstance(row, dict) and isinstance(first, str) and isinstance(name := row.get(first), str):
            out[cut(name)] = [number_or_none(row.get(c)) for c in labels]
    return {"columns": labels, "rows": out}


def runs_data(index_dir: Path, live: bool = False) -> RunsData:
    """What the page shows of index_dir/index.json (module doc); `live`: each site linked through the server,
    else by its file address. InputError when there is no index or it holds no run."""
    index_dir = Path(index_dir)
    entries = read_index(index_dir)
    if not entries:
        raise InputError(index_dir / INDEX_FILE, "no run index here (score runs add to <index_dir>/index.json, "
                                                 "by default <home>/runs)")
    base, labels = short_paths([e["run"] for e in entries], index_dir)
    runs: list[RunRow] = []
    for entry, label in zip(entries, labels):
        run = Path(entry["run"])
        key = run_key(entry["run"])
        scores = averages if isinstance(averages := entry.get("average_score"), dict) else {}
        built = (run / SITE).is_file()
        runs.append({"key": key, "run": cut(label), "path": cut(entry["run"]), "time": cut(entry.get("time")),
                     "models": [[cut(m), number_or_none(scores.get(m))]
                                for m in entry.get("models") or []],
                     "best": [cut(v) if isinstance(v, str) else v for v in best_model(entry)],
                     "set": entry_set(entry), "settings": cut(entry_settings(entry)),
                     "site": (f"site/{key}/index.html" if live else run.joinpath(SITE).resolve().as_uri())
                     if built else None,
                     "board": _board(run)})
    return {"index": str(index_dir / INDEX_FILE), "base": str(base), "compared": list(COMPARED), "runs": runs,
            "live": live, "poll": POLL_S}


def runs_page(data: RunsData) -> str:
    """The page's HTML of `runs_data`."""
    env = Environment(loader=PackageLoader("engine.viewer", "templates"), autoescape=True)
    env.filters["js"] = js_literal
    scripts = [(STATIC / name).read_text(encoding="utf-8") for name in RUNS_SCRIPTS]
    styles = (STATIC / "runs.css").read_text(encoding="utf-8")
    assert all("</" not in text for text in (*scripts, styles)), "the page's own scripts and styles are inline"
    return env.get_template("runs.html.j2").render(data=data, scripts=scripts, styles=styles)


def write_runs_page(index_dir: Path, out: Path | None = None) -> Path:
    """Write the runs page of index_dir/index.json to out (default: index_dir)/runs.html; its path."""
    path = Path(out or index_dir) / PAGE
    atomic_write_text(path, runs_page(runs_data(index_dir)))
    return path


class RunsState:
    """The served page's data, read again when the index file changes (thread-safe)."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._data: ServedData | None = None
        self._sites: dict[str, Path] = {}

    def current(self) -> ServedData:
        """The data of the index as it is now, with its ``version`` (the index file's time and size)."""
        path = self.index_dir / INDEX_FILE
        with self._lock:
            try:
                st = path.stat()
                stamp = (st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = (0, 0)
            if stamp != self._stamp:
                try:
                    data = runs_data(self.index_dir, live=True)
                except InputError:
                    data = {"index": str(path), "base": str(self.index_dir), "compared": list(COMPARED), "runs": [],
                            "live": True, "poll": POLL_S}
                self._data = {**data, "version": f"{stamp[0]}-{stamp[1]}"}
                self._sites = {r["key"]: Path(r["path"]) / Path(SITE).parent for r in data["runs"]}
                self._stamp = stamp
            assert self._data is not None  # read above on the first call (the stamp starts as None)
            return self._data

    def site_file(self, key: str, rel: str) -> bytes:
        """The bytes of a file of the site of run `key` (beneath its viewer folder, no link followed);
        Refused otherwise."""
        self.current()
        with self._lock:
            site = self._sites.get(key)
        if site is None:
            raise Refused("no such run")
        return read_beneath(site, rel or "index.html")


def _handler(state: RunsState) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        """GET /, /runs.html: the page; /runs.json: its data; /site/<key>/<path>: a file of a run's site."""

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            if path in ("/", f"/{PAGE}"):
                self._send(runs_page(state.current()).encode("utf-8"), "text/html; charset=utf-8")
            elif path == "/runs.json":
                self._send(json.dumps(state.current()).encode("utf-8"), "application/json")
            elif path.startswith("/site/") and path.count("/") >= 2:
                key, _, rel = path[len("/site/"):].partition("/")
                try:
                    body = state.site_file(key, rel)
                except Refused:
                    self.send_error(404)
                    return
                kind = mimetypes.guess_type(rel or "index.html")[0] or "application/octet-stream"
                self._send(body, kind + ("; charset=utf-8" if kind.startswith("text/") or kind.endswith("javascript")
                                         else ""))
            else:
                self.send_error(404)

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: a served page asks every few seconds."""

    return Handler


def serve_runs(index_dir: Path, port: int) -> None:
    """Serve the runs page of index_dir on 127.0.0.1 until Ctrl-C, which ends the app as any interrupted run
    does (one line, status 130); new runs show as the index gets them."""
    state = RunsState(index_dir)
    runs_data(index_dir)  # a folder without an index is refused before serving
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(state)) as server:
        try:
            print(f"serving the runs of {os.fspath(Path(index_dir) / INDEX_FILE)} at "
                  f"http://127.0.0.1:{server.server_address[1]}/ (new runs show as they land; Ctrl-C stops)",
                  flush=True)
            server.serve_forever()
        except KeyboardInterrupt:
            raise Interrupted("stopped serving the runs") from None
