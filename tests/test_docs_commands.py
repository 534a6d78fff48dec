"""The documented commands run as written: every command of a fenced ```bash block that README.md,
rollout/README.md or a page of docs/ marks runnable (an HTML comment on the line before the fence,
`<!-- runnable -->`, or `<!-- runnable slow -->` for a block that takes more than a few seconds; GitHub
renders neither) runs against the demo data and must exit 0; and every relative link of those pages
leads to a file, and to a heading of it when it names one.

How a command runs: in a shell (`bash -c`, one command at a time, in the block's order) whose working
directory is a scratch folder holding a link to each top-level entry of the repository (so
`scripts/...`, `conf/`, `rollout/...` resolve as in a clone, and what a command writes to the
working directory, `results/` say, lands in the scratch folder); OUT, the folder the examples write
under (`results_dir=${OUT:-runs}/m3`), is a scratch folder of the module, and so is `/tmp/`, replaced in
a command; HOME, TMPDIR and M3BENCH_HOME are scratch folders too, the embedding cache is the session's,
and `python` is this interpreter's: a `python SCRIPT.py ...` command runs as a process forked from one
that has imported the project once (tests/preloaded.py), with the command's arguments, directory,
environment and streams, so that it pays no start-up time; any other `python` command line runs the
interpreter itself.
One scored demo run (`${OUT:-runs}/demo`) serves every block that reads it: the scoring page's block makes it,
or the `demo_run` fixture when that block did not run first."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from preloaded import preloaded

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "rollout" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- runnable( slow)? -->$")
DEMO = "${OUT:-runs}/demo"
DEMO_RUN = f"python scripts/score.py output_dir={DEMO}"
LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """A runnable block: where it is, whether it is slow, its commands (continuations joined)."""

    page: str
    line: int
    slow: bool
    commands: tuple[str, ...]


def commands_of(lines: list[str]) -> tuple[str, ...]:
    """The commands of a block's lines: a line ending in a backslash continues on the next one;
    blank lines and comment lines are not commands."""
    commands: list[str] = []
    pending = ""
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        commands.append((pending + line).strip())
        pending = ""
    assert not pending, f"a block ends inside a continued command: {pending!r}"
    return tuple(commands)


def runnable_blocks() -> list[Block]:
    """Every block marked runnable in the documentation pages, in page order."""
    blocks = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            mark = MARKER.match(line.strip())
            if not mark:
                continue
            assert i + 1 < len(lines) and lines[i + 1].strip() == "```bash", \
                f"{page.relative_to(ROOT)}:{i + 1}: a runnable marker must stand right above a ```bash fence"
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            blocks.append(Block(str(page.relative_to(ROOT)), i + 1, bool(mark.group(1)),
                                commands_of(lines[i + 2:end])))
    return blocks


BLOCKS = runnable_blocks()


Scratch = tuple[Path, Path, dict[str, str]]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, embedding_cache: Path) -> Scratch:
    """The working directory (links to the repository's entries), the folder standing for /tmp/, and
    the environment the commands run in (`python` first on its PATH: the preloaded one)."""
    base = tmp_path_factory.mktemp("docs")
    work, tmp = base / "work", base / "tmp"
    for folder in (work, tmp, base / "home", base / "tmpdir", base / "m3home"):
        folder.mkdir()
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in ("results", "runs", "__pycache__"):
            (work / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if not k.startswith("M3BENCH_")}
    shim = preloaded().python_shim(base / "bin")
    env.update(HOME=str(base / "home"), TMPDIR=str(base / "tmpdir"), M3BENCH_HOME=str(base / "m3home"), OUT=str(tmp),
               M3BENCH_CACHE=str(embedding_cache), PYTHONPATH=str(ROOT),
               PATH=os.pathsep.join([str(shim), str(Path(sys.executable).parent), env.get("PATH", "")]))
    if "M3BENCH_SHARED" in os.environ:
        env["M3BENCH_SHARED"] = os.environ["M3BENCH_SHARED"]
    return work, tmp, env


def run_command(command: str, scratch: Scratch) -> subprocess.CompletedProcess:
    """One command as written, /tmp/ standing for the scratch folder (as OUT does)."""
    work, tmp, env = scratch
    return subprocess.run(["bash", "-c", command.replace("/tmp/", f"{tmp}/")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def demo_run(scratch: Scratch) -> Path:
    """The scored demo (`${OUT:-runs}/demo`) a block reads without making it: the one the scoring page's block
    made when it ran first, else made here, once."""
    run = scratch[1] / "demo"
    if not (run / "leaderboard.md").is_file():
        proc = run_command(DEMO_RUN, scratch)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return run


def test_the_runnable_blocks_are_found() -> None:
    """The pages mark the commands of the main flows runnable: the blocks are collected, each holds
    commands, and the flows the pages describe are among them."""
    commands = [c for b in BLOCKS for c in b.commands]
    assert all(b.commands for b in BLOCKS)
    for needle in ("scripts/rollout.py model=scripted tasks=demo", "judges=scripted data=vtb_demo",
                   "data=mcpverse_demo", "data=tobench_demo", "trials=", "scripts/view.py", "scripts/report.py",
                   "scripts/servers.py check", "--help", DEMO_RUN):
        assert any(needle in c for c in commands), needle


OFFLINE = re.compile(r"model=scripted|judges=scripted|data=(demo|\w+_demo)\b|tasks=(demo|\w+_demo)\b|--help")
ELSEWHERE = re.compile(r"^<!-- not runnable here: \S.* -->$")
"""The marker of an offline block that needs what no test machine has (the installed published suite), saying what."""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_offline_blocks_are_marked_runnable(page: Path) -> None:
    """A ```bash block with an offline command (the scripted model or judges, a demo set, --help) is
    marked runnable, so it runs here, or says what it needs that no test machine has (ELSEWHERE)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    unmarked = [i + 1 for i, line in enumerate(lines) if line.strip() == "```bash"
                and not (i and (MARKER.match(lines[i - 1].strip()) or ELSEWHERE.match(lines[i - 1].strip())))
                and any(OFFLINE.search(x) for x in lines[i + 1:next(j for j in range(i + 1, len(lines))
                                                                   if lines[j].strip() == "```")])]
    assert not unmarked, f"{page.relative_to(ROOT)}: offline blocks not marked runnable at lines {unmarked}"


@pytest.mark.parametrize("block", [pytest.param(b, id=f"{b.page}:{b.line}", marks=[pytest.mark.slow] if b.slow else [])
                                   for b in BLOCKS])
def test_documented_block_runs(block: Block, scratch: Scratch,
                                request: pytest.FixtureRequest) -> None:
    """Every command of the block exits 0, in order."""
    if any(f"{DEMO} " in f"{c} " for c in block.commands) and DEMO_RUN not in block.commands:
        request.getfixturevalue("demo_run")
    for command in block.commands:
        proc = run_command(command, scratch)
        assert proc.returncode == 0, (f"{block.page}:{block.line}: `{command}` exited {proc.returncode}\n"
                                      f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


def test_a_command_s_python_run_keeps_its_status_streams_and_setting(scratch: Scratch) -> None:
    """The preloaded `python` of the commands (see the module's docstring) gives a script's exit status,
    its stdout and stderr, its working directory and environment, as the interpreter would."""
    refused = run_command("python scripts/score.py no_such_setting=1", scratch)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "no_such_setting" in refused.stderr
    (scratch[1] / "probe.py").write_text("import os, sys\nprint(os.getcwd(), os.environ['PROBE'], sys.argv[1:])\n"
                                         "print('to stderr', file=sys.stderr)\nsys.exit(int(sys.argv[1]))\n")
    done = run_command("cd /tmp/ && PROBE=set python probe.py 3 x", scratch)
    assert (done.returncode, done.stdout.split(), done.stderr) == (3, [str(scratch[1]), "set", "['3',", "'x']"],
                                                                    "to stderr\n")
    assert run_command("python -c 'import sys; sys.exit(4)'", scratch).returncode == 4
    (scratch[1] / "kill.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    killed = run_command("cd /tmp/ && python kill.py", scratch).returncode
    real = subprocess.run(["bash", "-c", f"cd '{scratch[1]}' && '{sys.executable}' kill.py"], env=scratch[2])
    assert killed == real.returncode == -signal.SIGKILL


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    """Every relative link leads to a file of the repository, and its #anchor to a heading there."""
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in heading_anchors(dest)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_rollout_readme_names_every_model_option() -> None:
    """The model row of the rollout README's settings table lists every option of conf/rollout/model/."""
    row = next(line for line in (ROOT / "rollout" / "README.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `model` |"))
    named = set(re.findall(r"`([a-z0-9_]+)`", row.split("|")[2]))
    assert {p.stem for p in (ROOT / "conf" / "rollout" / "model").glob("*.yaml")} <= named


def test_rollout_help_and_readme_say_the_same_exit_status() -> None:
    """What exit status 1 (and 130) of a rollout means, said alike by --help's footer and the README."""
    footer = " ".join(yaml.safe_load((ROOT / "conf" / "rollout" / "hydra" / "help" / "rollout.yaml").read_text(
        encoding="utf-8"))["footer"].split())
    readme = " ".join((ROOT / "rollout" / "README.md").read_text(encoding="utf-8").split())
    for said in ("Exit status: 0 when no task was lost to the infrastructure, 1 when some were (a model API error "
                 "that outlived its retries, say; run the same command again to retry just those), 2 for bad input",
                 "130 when interrupted"):
        assert said in footer and said in readme, said


def fenced_bash(page: Path) -> list[tuple[int, str]]:
    """The lines of a page's ```bash blocks, with their line numbers."""
    found, inside = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip() in ("```bash", "```"):
            inside = line.strip() == "```bash"
        elif inside:
            found.append((number, line))
    return found


def test_the_readme_s_set_up_commands_are_the_ones_ci_runs() -> None:
    """The README's install and test commands, as written there, are the ones .ci/run runs."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    setup = [line for _, line in fenced_bash(ROOT / "README.md") if line.startswith(("python3 -m venv", ". .venv"))]
    install = 'python -m pip install "torch==2.13.0" -e ".[test]"'
    tests = "python -m pytest -q -n auto --dist loadfile"
    assert len(setup) == 2, setup
    assert setup[0].endswith(f"&& {install} && python scripts/score.py") and setup[1].endswith(f"&& {tests}"), setup
    assert f"python -m pip install -q {install[len('python -m pip install '):]}" in ci and ci.rstrip().endswith(tests)


def test_examples_write_under_a_folder_the_user_chooses() -> None:
    """No example of the pages writes to a fixed /tmp/ folder, which two people on one machine would share."""
    fixed = [f"{page.relative_to(ROOT)}:{number}" for page in PAGES for number, line in fenced_bash(page)
             if "/tmp/" in line]
    assert not fixed, fixed


def test_the_configuration_page_names_every_console_script() -> None:
    """Each console script of pyproject.toml's [project.scripts] is among configuration.md's commands."""
    section = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[project.scripts]")[1].split("\n[")[0]
    scripts = re.findall(r"^(m3bench-[a-z]+) =", section, re.MULTILINE)
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    listed = page[page.index("Installed console commands:"):].split("(the same apps")[0]
    assert len(scripts) >= 7 and [s for s in scripts if f"`{s}`" not in listed] == []
