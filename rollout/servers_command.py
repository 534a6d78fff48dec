"""The servers command (``scripts/servers.py``): build the servers' environments, check their health,
time the host's cost per call.

    python scripts/servers.py install [--config FILE] [-j N]   # per-server environments (uv or venv+pip, npm)
    python scripts/servers.py check [--config FILE]     # start each server: a health table; exit 0 if all started
    python scripts/servers.py bench [--config FILE] --server NAME   # the host's cost per call of NAME's check call
    python scripts/servers.py init DIR                  # a config for the server folders under DIR, for review
    python scripts/servers.py init DIR --complete CONFIG [--requirements FILE]   # CONFIG with install blocks added
    python scripts/servers.py system-deps [--config FILE]  # the system packages the servers need, one line
    python scripts/servers.py placeholders [--config FILE] --keys FILE [--tasks FILE --images DIR]
                                                        # placeholder keys and task images, to run offline

``--config`` defaults to the shipped rollout/servers.json (the rollout's default ``servers``); the command is
also installed as ``m3bench-servers``.
Bad input is one line naming the file and the field, with exit status 2. This is the command line on
top of the rollout (it drives the ToolRunner too); nothing in rollout.mcp imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from engine.apps.kit import command_app
from engine.contract import InputError, atomic_write_json
from rollout.mcp.check import check_servers, health_table
from rollout.mcp.complete import complete_config
from rollout.mcp.config import ENVIRONMENT_MODES, ServerSpec, read_servers_config
from rollout.mcp.derive import derive_config
from rollout.mcp.host import MCPHost
from rollout.mcp.install import INSTALLERS, InstallOutcome, install_server
from rollout.mcp.launch import entry_words
from rollout.mcp.placeholders import write_keys, write_placeholder_images
from rollout.mcp.requirements import missing_here, server_system_packages
from rollout.servers_bench import measure_overhead

SHIPPED_CONFIG = Path(__file__).resolve().parent / "servers.json"
"""The servers config shipped with the rollout, the default of ``--config``."""

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="servers.py", description="Install, check and time the MCP servers of "
                                     "a servers config (the published mcp_servers.json shape, see rollout/README.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init", help="write a servers config for the server folders under DIR, for review",
                               description="write a servers config for the server folders under DIR (install "
                               "blocks and entry points derived from each folder's own files), for review")
    init.add_argument("dir", type=Path, help="the folder whose subfolders are MCP servers")
    init.add_argument("--output", type=Path, default=None, help="the config to write (default DIR/mcp_servers.json; "
                      "with --complete, CONFIG's folder/<CONFIG's stem>.derived.json)")
    init.add_argument("--complete", type=Path, default=None, metavar="CONFIG", help="an existing servers config (the "
                      "published shape) to complete: each entry keeps its command, args, env and disabled and gets "
                      "the install block of the folder or file under DIR it runs")
    init.add_argument("--requirements", type=Path, default=None, metavar="FILE", help="with --complete: the "
                      "requirements file of the single-file servers run with python (default: each file's imports)")
    init.add_argument("--offline", action="store_true", help="with --complete: ask the package registry nothing "
                      "(a python -m MODULE the requirements file does not name is left)")
    init.add_argument("--force", action="store_true", help="replace an existing output file")
    for name, text in (("install", "build the per-server environments the config's install blocks ask for"),
                       ("check", "start each enabled server, list its tools, time a round trip; print a table"),
                       ("bench", "time one server's check call through the SDK, MCPHost and ToolRunner"),
                       ("system-deps", "print the system (Debian) packages the servers need on one line, for "
                        "apt-get install; which server needs which, and what this machine lacks, on stderr")):
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument("--config", type=Path, default=SHIPPED_CONFIG, help="the servers config (JSON; default: "
                         "the shipped rollout/servers.json, the rollout's default `servers`)")
        sub.add_argument("--envs", type=Path, default=None, help="where per-server environments live (default: the "
                         "config's 'environments', else $M3BENCH_SERVER_ENVS or ~/.cache/m3bench/server-envs)")
        sub.add_argument("--environment", choices=ENVIRONMENT_MODES, default=None, help="what the servers' "
                         "environments hold: declared (the default variables and their own) or whole (this "
                         "process's whole environment, as the published host ran them); default: the config's")
        if name not in ("bench", "system-deps"):
            sub.add_argument("--only", nargs="+", metavar="SERVER", help="only these servers")
    install = commands.choices["install"]
    install.add_argument("--installer", choices=INSTALLERS, default="auto",
                         help="uv, venv+pip, or auto (uv when found; default)")
    install.add_argument("--force", action="store_true", help="rebuild environments that are already there")
    install.add_argument("-j", "--jobs", type=_jobs, default=1, help="environments built at once (default 1)")
    install.add_argument("--logs", type=Path, default=None, help="folder of the per-server build logs, "
                         "<server>.log (default: logs/ in the environments folder)")
    check = commands.choices["check"]
    check.add_argument("--start-timeout", type=float, default=20.0, help="seconds for a server to start (default 20)")
    check.add_argument("--call-timeout", type=float, default=10.0, help="seconds for the round trip (default 10)")
    check.add_argument("--logs", type=Path, default=None, help="folder for the servers' stderr logs (default: a "
                       "temporary folder; failed starts show their stderr tail either way)")
    bench = commands.choices["bench"]
    bench.add_argument("--server", required=True, help="the server whose 'check' call is timed")
    bench.add_argument("-n", "--calls", type=int, default=200, help="calls per way (default 200)")
    placeholders = commands.add_parser(
        "placeholders", help="write placeholder keys for a config's servers and placeholder images for a tasks file",
        description="write a shell file exporting a placeholder value (m3bench-placeholder-...) for each variable "
        "named like a secret that the config's enabled servers read, so that they start offline without the real "
        "keys (the values are never redacted from results); with --tasks and --images, a grey placeholder image "
        "under DIR for each image the tasks file names that DIR lacks (give DIR as tasks.images_dir)")
    placeholders.add_argument("--config", type=Path, default=SHIPPED_CONFIG, help="the servers config (JSON; "
                              "default: the shipped rollout/servers.json)")
    placeholders.add_argument("--keys", type=Path, default=None, metavar="FILE", help="the shell file to write "
                              "(read it with . FILE)")
    placeholders.add_argument("--tasks", type=Path, default=None, metavar="FILE", help="a tasks file whose images "
                              "to stand in for (with --images)")
    placeholders.add_argument("--images", type=Path, default=None, metavar="DIR", help="the folder the tasks' image "
                              "paths are relative to, as tasks.images_dir (with --tasks); existing files are kept")
    placeholders.add_argument("--force", action="store_true", help="replace an existing --keys file")
    return parser


def _selected(specs: list[ServerSpec], only: list[str] | None, config: Path) -> list[ServerSpec]:
    enabled = [s for s in specs if not s.disabled]
    if not only:
        return enabled
    unknown = sorted(set(only) - {s.name for s in enabled})
    if unknown:
        raise InputError(config, f"no enabled server named {', '.join(unknown)}", field="servers")
    return [s for s in enabled if s.name in only]


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value!r}")
    return jobs


def _log_path(spec: ServerSpec, logs: Path | None) -> Path | None:
    """Where a server's build log goes: `logs`, else logs/ in its environments folder (None: nothing to build)."""
    if spec.env_folder is None:
        return None
    folder = logs if logs is not None else Path(spec.env_folder).parent / "logs"
    return folder / f"{re.sub(r'[^A-Za-z0-9._-]', '_', spec.name)}.log"


FIRST_START_TIMEOUT = 120.0
"""Seconds a server is given for its first start after its install (at the end of ``install``)."""


async def _first_starts(specs: list[ServerSpec], log_dir: Path | None) -> list[tuple[str, str | None]]:
    """Start the servers once, all at once, and stop them: (server, why it did not start or None)."""
    host = MCPHost(specs, start_timeout=FIRST_START_TIMEOUT, max_restarts=0, log_dir=log_dir)
    await host.start()
    try:
        return [(s.spec.name, s.error) for s in host.servers]
    finally:
        await host.close()


def warm_servers(specs: list[ServerSpec], log_dir: Path | None) -> str:
    """Start each newly installed server once, so that its first start (bytecode compiled, npx and per-user caches
    filled: 9 to 20 s on a loaded machine) happens in ``install`` rather than in the first check or rollout; one
    line saying how many started (a server that needs a key it lacks starts in the check once it has it)."""
    if not specs:
        return ""
    began = time.monotonic()
    outcomes = asyncio.run(_first_starts(specs, log_dir))
    failed = [name for name, error in outcomes if error is not None]
    return (f"first start of each installed server (to fill its caches): {len(outcomes) - len(failed)} of "
            f"{len(outcomes)} started, {time.monotonic() - began:.1f} s" +
            (f"; not started: {', '.join(failed)} (check says why)" if failed else ""))


def _install(args: argparse.Namespace, specs: list[ServerSpec]) -> int:
    """Build the environments, `args.jobs` at once; a row per server as it finishes, then the first start of those
    installed and a summary."""
    began = time.monotonic()
    outcomes = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(install_server, spec, args.installer, args.force, _log_path(spec, args.logs))
                   for spec in specs]
        for future in as_completed(futures):
            outcome = future.result()
            outcomes.append(outcome)
            print(f"{outcome.server:<24} {outcome.status:<18} {outcome.seconds:6.1f} s  {_install_detail(outcome)}",
                  flush=True)
    installed = {o.server for o in outcomes if o.status == "installed"}
    # read again: an entry's command is taken from its environment only once that is there
    fresh = [s for s in read_servers_config(args.config, args.envs, args.environment) if s.name in installed]
    first_log = _log_path(fresh[0], args.logs) if fresh else None
    warmed = warm_servers(fresh, first_log.parent if first_log else None)
    if warmed:
        print(warmed, flush=True)
    counts = Counter(o.status for o in outcomes)
    failed = [o.server for o in outcomes if o.status == "failed"]
    named = {"failed": failed, "skipped": [f"{o.server}: the registry lacks {o.registry_lacks}"
                                           for o in outcomes if o.status == "skipped"]}
    logs = sorted({str(p.parent) for p in (_log_path(s, args.logs) for s in specs) if p is not None and p.exists()})
    print(", ".join(f"{counts[k]} {k}" + (f" ({', '.join(sorted(named[k]))})" if named.get(k) else "")
                    for k in ("installed", "up to date", "nothing to install", "failed", "skipped") if counts[k]) +
          f"; {len(specs)} server(s), {args.jobs} at once, {time.monotonic() - began:.1f} s" +
          (f"; build logs in {', '.join(logs)}" if logs else ""))
    if counts["nothing to install"] == len(specs):
        print(COMPLETE_HINT)
    return 1 if failed else 0


def _install_detail(outcome: InstallOutcome) -> str:
    """A row's detail: the outcome's, and for a build the registry cannot serve, that later runs skip it."""
    again = f"python scripts/servers.py install --force --only {outcome.server} tries again"
    if outcome.status == "skipped":
        return f"its build cannot succeed as written (an earlier install found): {outcome.detail}; {again}"
    if outcome.status == "failed" and outcome.registry_lacks:
        return (f"{outcome.detail}; the registry lacks {outcome.registry_lacks}, so later installs and checks skip "
                f"this server (exit status 0); {again}")
    return outcome.detail


COMPLETE_HINT = ("hint: no entry of this config has an install block; for a published config (entries that run "
                 "servers/...), python scripts/servers.py init SERVERS_DIR --complete CONFIG [--requirements FILE] "
                 "writes one that has them (rollout/README.md, \"Completing a published config\")")


def _system_deps(specs: list[ServerSpec]) -> int:
    """The system packages of every enabled server on stdout, one line; per server and what is missing on stderr."""
    every: list[str] = []
    for spec in specs:
        packages = server_system_packages(spec.install.requirements if spec.install else (), spec.env_folder,
                                          spec.install.build_dir if spec.install else None)
        if packages:
            lacking = missing_here(packages)
            print(f"{spec.name:<24} {' '.join(packages)}" + (f"   (missing here: {' '.join(lacking)})"
                                                               if lacking else ""), file=sys.stderr)
            every += packages
    wanted = list(dict.fromkeys(every))
    print(" ".join(wanted))
    lacking = missing_here(wanted)
    if lacking:
        print(f"missing here: {' '.join(lacking)}; as root: apt-get update && apt-get install -y "
              f"{' '.join(lacking)}", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace, specs: list[ServerSpec]) -> int:
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="m3bench-check-") as tmp:
        rows = asyncio.run(check_servers(specs, args.start_timeout, args.call_timeout, args.logs or Path(tmp)))
    print(health_table(rows))
    started = sum(r.started for r in rows)
    skipped = [r.server for r in rows if r.skipped]
    print(f"{started} of {len(rows)} server(s) started, {sum(r.tools for r in rows)} tools, "
          f"{time.monotonic() - began:.1f} s" +
          (f"; {len(skipped)} skipped ({', '.join(skipped)}: a build that cannot succeed as written, see its row)"
           if skipped else ""))
    for row in rows:
        if row.warning:
            print(f"warning: {row.server} {row.warning} (python scripts/servers.py system-deps lists the packages)")
    if started < len(rows) - len(skipped) and all(s.install is None for s in specs):
        print(COMPLETE_HINT)
    return 0 if started == len(rows) - len(skipped) else 1


def _placeholders(args: argparse.Namespace) -> int:
    """Write the placeholder keys and images asked for; a line for each."""
    if (args.tasks is None) != (args.images is None):
        raise InputError(args.tasks or args.images, "--tasks and --images go together")
    if args.keys is None and args.images is None:
        raise InputError(args.config, "placeholders needs --keys FILE, or --tasks FILE with --images DIR")
    if args.keys is not None:
        names = write_keys(args.keys, args.config, args.force)
        print(f"wrote {args.keys}: {len(names)} placeholder key(s)" + (f" ({' '.join(names)})" if names else "") +
              f"; read it with . {args.keys}")
    if args.tasks is not None:
        written, present = write_placeholder_images(args.tasks, args.images)
        print(f"wrote {written} placeholder image(s) under {args.images} ({present} already there); give "
              f"tasks.images_dir={args.images} to the rollout")
    return 0


def _complete(args: argparse.Namespace) -> int:
    """Write the completed config; a row per entry, then what could not be derived. Exit 1 when something was not."""
    config = args.complete
    if not config.is_file():
        raise InputError(config, "no such servers config")
    if args.requirements is not None and not args.requirements.is_file():
        raise InputError(args.requirements, "no such requirements file")
    output = args.output or config.with_name(f"{config.stem}.derived.json")
    if output.resolve().parent != config.resolve().parent:
        raise InputError(output, f"must be in the folder of {config} (its entries' paths are relative to it)")
    if output.resolve() == config.resolve():
        raise InputError(output, "is the config being completed (write the completed one beside it)")
    if output.exists() and not args.force:
        raise InputError(output, "exists already (use --force to replace it)")
    completed, how = complete_config(args.dir, config, args.requirements, registry=not args.offline)
    atomic_write_json(output, completed)
    for c in how:
        print(f"{c.name:<24} {c.kind + (' (disabled)' if c.disabled else ''):<19} " + "; ".join(c.added))
    left = [c for c in how if c.missing]
    if left:
        print("\ncould not derive (fill in by hand):")
        for c in left:
            print(f"  {c.name:<22} " + "; ".join(c.missing))
    kinds = Counter(c.kind for c in how if not c.missing)
    print(f"\nwrote {output}: {len(how) - len(left)} of {len(how)} entries covered (" +
          ", ".join(f"{kinds[k]} {label}" for k, label in (
              ("folder", "from their folders"), ("file", "single files"), ("module", "python -m of a distribution"),
              ("package", "uvx/npx"), ("kept", "with their own environment"))) +
          f"), {len(left)} left" + (f" ({', '.join(c.name for c in left)})" if left else "") +
          f"; review it, then python scripts/servers.py install --config {output}")
    return 1 if left else 0


def _init(args: argparse.Namespace) -> int:
    """Write the derived config; a row per folder, then what could not be derived. Exit 1 when something was not."""
    if not args.dir.is_dir():
        raise InputError(args.dir, "not a folder of server folders")
    if args.complete is not None:
        return _complete(args)
    if args.requirements is not None:
        raise InputError(args.requirements, "--requirements goes with --complete")
    output = args.output or args.dir / "mcp_servers.json"
    if output.exists() and not args.force:
        raise InputError(output, "exists already (use --force to replace it)")
    config, derived = derive_config(args.dir, output)
    atomic_write_json(output, config)
    for d in derived:
        if d.entry is not None:
            print(f"{d.name:<24} {' '.join(entry_words(d.entry))}".rstrip() + "   " +
                  "; ".join(d.sources))
    missing = [d for d in derived if d.missing]
    if missing:
        print("\ncould not derive (fill in by hand):")
        for d in missing:
            print(f"  {d.name:<22} " + ("" if d.entry is not None else "LEFT OUT: ") + "; ".join(d.missing))
    servers = config["servers"]
    written = len(servers) if isinstance(servers, dict) else 0
    print(f"\nwrote {output}: {written} of {len(derived)} folder(s); review it, then "
          f"python scripts/servers.py install --config {output}")
    return 1 if missing else 0


def run(argv: list[str] | None = None) -> int:
    """Run a servers command; its exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("rollout.mcp.config").setLevel(logging.WARNING)
    try:
        if args.command == "init":
            return _init(args)
        if args.command == "placeholders":
            return _placeholders(args)
        specs = read_servers_config(args.config, args.envs, args.environment)
        if args.command == "bench":
            spec = next((s for s in specs if s.name == args.server and not s.disabled), None)
            if spec is None or spec.check is None:
                raise InputError(args.config, "needs an enabled server with a 'check' call",
                                 field=f"servers.{args.server}.check")
            print(asyncio.run(measure_overhead(spec, args.calls)).report(spec.name, spec.check[0]))
            return 0
        if args.command == "system-deps":
            return _system_deps([s for s in specs if not s.disabled])
        selected = _selected(specs, args.only, args.config)
        if args.command == "check" and not selected:
            raise InputError(args.config, "no server to check (the config has no enabled server)", field="servers")
        return _install(args, selected) if args.command == "install" else _check(args, selected)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


main = command_app("servers", run)
