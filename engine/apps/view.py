"""The viewer app (``m3bench-view``, ``scripts/view.py``): a static site of a finished run, optionally served.

Like the report app it takes one run folder and a few switches, so it is a plain command line.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import logging
import sys
from pathlib import Path

from engine.apps.kit import command_app
from engine.contract import InputError, Interrupted
from engine.reports.index import INDEX_FILE
from engine.viewer.runs import serve_runs, write_runs_page
from engine.viewer.site import build_site


def serve(site: Path, port: int) -> None:
    """Serve the site folder on 127.0.0.1 until Ctrl-C (stdlib http.server), which ends the app as any
    interrupted run does (one line, status 130)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        try:  # from the line that says so on: a Ctrl-C just after it stops the serving too
            print(f"serving {site} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
            server.serve_forever()
        except KeyboardInterrupt:
            raise Interrupted(f"stopped serving; the site stays in {site}") from None


def run(argv: list[str] | None = None) -> int:
    """Parse the command line, build the site (and serve it with --serve); returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="m3bench-view", description="Write a static site of a finished scoring run (leaderboard, per-model "
        "tasks with their alignment drawn, judges, plots) that opens from the file system.")
    parser.add_argument("run_dir", type=Path, help="a finished scoring run (results_eval.json files, up to two "
                                                   "folder levels down), or a run index folder (index.json: "
                                                   "writes its runs.html, every run with its settings and site; "
                                                   "with --serve, serves it and shows new runs as they land)")
    parser.add_argument("--out", type=Path, default=None, help="site folder (default: RUN_DIR/viewer): a new or "
                        "empty folder, or an earlier site holding only the files the viewer wrote, which is "
                        "replaced (any other file there: refused, exit status 2)")
    parser.add_argument("--images", type=Path, default=None,
                        help="folder of the task images (default: the reference file's folder)")
    parser.add_argument("--serve", action="store_true", help="then serve the site on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="port for --serve (default 8000; 0 picks one)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s")
    try:
        if (args.run_dir / INDEX_FILE).is_file():
            if args.serve:
                serve_runs(args.run_dir, args.port)
                return 0
            page = write_runs_page(args.run_dir, args.out)
            print(f"wrote {page} (open it in a browser)", flush=True)
            return 0
        index = build_site(args.run_dir, args.out, args.images)
    except (InputError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {index} (open it in a browser)", flush=True)
    if args.serve:
        serve(index.parent, args.port)
    return 0


main = command_app("view", run)
