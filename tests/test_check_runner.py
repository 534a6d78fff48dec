"""Checks run contained (engine.judging.sandbox.runner), with real processes and, where it works here,
real bubblewrap: the environment holds the base and the named variables only and secret values never
come back; 300 MB of output keep the runner's memory low; a setsid child and a child holding stderr do
not outlive the run nor turn a pass into a timeout; the workspace is a copy; with bubblewrap, writes
outside the scratch folder, the network and the user's home are out of reach. Then the judge app's
verifiers flow, score app and viewer with a key in the judge's environment: the key is in no file."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine.contract import InputError, read_trajectories
from engine.evaluators import verifiers as vf
from engine.evaluators.base import TaskInputs
from engine.evaluators.protocol import JudgeContext, RunFiles
from engine.judging import BASE_ENV, CheckRun, Limits, bubblewrap, run_contained

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-test-4f1c9a7e2b-do-not-leak"
BWRAP = pytest.param(True, id="bubblewrap", marks=pytest.mark.skipif(
    bubblewrap()[0] is None, reason=f"no bubblewrap sandbox here: {bubblewrap()[1]} (.ci/run installs it)"))
MODES = [pytest.param(False, id="uncontained"), BWRAP]


def contained(code: str, *, isolate: bool, timeout: float = 20.0, **kwargs) -> CheckRun:
    """Run a Python snippet through the runner (sys.argv[1]: the number of its result descriptor)."""
    return asyncio.run(run_contained([sys.executable, "-c", textwrap.dedent(code), "{result}"], timeout=timeout,
                                     isolate=isolate, **kwargs))


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in (b"Z", b"X") and int(entry) != os.getpid():
            found.append(int(entry))
    return found


@pytest.mark.parametrize("isolate", MODES)
def test_environment_is_the_base_and_the_named(isolate: bool, monkeypatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "PLAIN_SETTING"):
        monkeypatch.setenv(name, f"{SECRET}-{name}")
    monkeypatch.setenv("NAMED_TOKEN", SECRET)
    run = contained("""
        import json, os, sys
        print(json.dumps(sorted(os.environ)))
        print("named:", os.environ.get("NAMED_TOKEN"), "home:", os.environ["HOME"])
        print(os.environ.get("NAMED_TOKEN"), file=sys.stderr)
        os.write(int(sys.argv[1]), json.dumps({"error": os.environ.get("NAMED_TOKEN")}).encode())
        """, isolate=isolate, env=("NAMED_TOKEN", "NOT_SET"))
    names, line = run.stdout.splitlines()
    assert set(json.loads(names)) - {"PWD"} == {*BASE_ENV, "NAMED_TOKEN"}  # bwrap sets PWD
    assert line.startswith("named: *** home: /") and str(Path.home()) not in line
    assert run.stderr == "***\n" and run.result == b'{"error": "***"}'
    assert SECRET not in run.stdout + run.stderr and run.status == 0 and run.contained is isolate


def test_300_mb_of_output_keep_the_runner_small(tmp_path: Path) -> None:
    script = tmp_path / "measure.py"
    script.write_text(textwrap.dedent("""
        import asyncio, json, resource, sys
        from engine.judging import Limits, run_contained
        flood = ("import sys\\nchunk = b'x' * (1 << 20)\\nfor _ in range(300):\\n"
                 "    sys.stdout.buffer.write(chunk); sys.stderr.buffer.write(chunk)\\nprint('end', file=sys.stderr)")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        run = asyncio.run(run_contained([sys.executable, "-c", flood], timeout=120, limits=Limits(output=65536)))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"before_kb": before, "after_kb": after, "status": run.status,
                          "kept": [len(run.stdout), len(run.stderr)],
                          "dropped": [run.stdout_dropped, run.stderr_dropped], "tail": run.stderr[-6:]}))
        """), encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["status"] == 0 and out["tail"] == "xxend\n"  # the end of the output is kept
    assert all(k <= 65536 + 100 for k in out["kept"])  # and the line marking what was dropped
    assert out["dropped"] == [300 * 2**20 - 65536, 300 * 2**20 + 4 - 65536]
    assert out["after_kb"] - out["before_kb"] < 40 * 1024, out  # was 644 MB reading stderr whole
    assert time.monotonic() - started < 120


@pytest.mark.parametrize("isolate", MODES)
def test_a_setsid_child_does_not_outlive_the_run(isolate: bool, tmp_path: Path) -> None:
    marker = f"m3-setsid-{os.getpid()}-{int(isolate)}"
    late, started = tmp_path / "late.txt", "started.txt"  # the second in the check's own working folder
    # a double fork: the grandchild leaves the session and is orphaned at once; the check ends once it runs
    run = contained(f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c",
                         "import sys, time; open(sys.argv[2], 'w').close(); time.sleep(3); "
                         "open(sys.argv[1], 'w').write('late')",
                         {str(late)!r}, {started!r}, {marker!r}])
            os._exit(0)
        deadline = time.monotonic() + 30
        while not os.path.exists({started!r}) and time.monotonic() < deadline:
            time.sleep(0.05)
        print("parent done")
        """, isolate=isolate)
    assert run.status == 0 and not run.timed_out and run.stdout == "parent done\n"
    assert run.leftovers >= 1 and processes_with(marker) == []
    time.sleep(3.5)
    assert not late.exists()


def test_a_child_left_at_the_timeout_is_killed() -> None:
    marker = f"m3-hang-{os.getpid()}"
    started = time.monotonic()
    run = contained(f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", {marker!r}], start_new_session=True)
        time.sleep(60)
        """, isolate=None, timeout=1.5)
    assert run.timed_out and run.status is None and run.leftovers >= 1
    assert processes_with(marker) == [] and time.monotonic() - started < 10


def write_check(folder: Path, name: str, body: str) -> None:
    (folder / name).write_text(textwrap.dedent(body), encoding="utf-8")


def judge_one(folder: Path, check: str, workspace: Path | None, **options) -> dict:
    preds = folder / "preds.json"
    preds.write_text(json.dumps([{"id": "t1", "steps": [], "final_reply": "done"}]), encoding="utf-8")
    ctx = JudgeContext(pool=None, attempts=1, options=vf.CheckOptions(**{"timeout": 20, **options}),
                       files=RunFiles(preds, tasks=folder / "tasks.json"))
    inputs = TaskInputs("t1", prediction=read_trajectories(preds).tasks["t1"],
                        task={"id": "t1", "question": "q", "check": check}, workspace=workspace, tool_log=[])
    return asyncio.run(vf.judge(ctx, inputs))


def test_a_child_holding_stderr_does_not_turn_a_pass_into_a_timeout(tmp_path: Path) -> None:
    (tmp_path / "tasks.json").write_text("[]", encoding="utf-8")
    marker = f"m3-holder-{os.getpid()}"
    write_check(tmp_path, "holder.py", f"""
        import subprocess, sys
        def check(trajectory, workspace, tool_log):
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", {marker!r}], stderr=sys.stderr)
            return [1, 1]
        """)
    started = time.monotonic()
    entry = judge_one(tmp_path, "holder.py", None)
    assert entry == {"check": "holder.py", "checks": [1, 1], "passed": True, "error": None}
    assert time.monotonic() - started < 10 and processes_with(marker) == []


WRITER = """
    import json, sys
    from pathlib import Path
    def attempt(path):
        try:
            Path(path).write_text("changed")
            return "written"
        except OSError as exc:
            return type(exc).__name__
    workspace, original, secret, *outside = sys.argv[1:]
    print(json.dumps({"copy": attempt(Path(workspace) / "data.txt"), "new": attempt(Path(workspace) / "new.txt"),
                      "original": attempt(original), "outside": [attempt(p) for p in outside],
                      "secret": Path(secret).read_text() if Path(secret).exists() else None}))
    """


@pytest.mark.parametrize("isolate", MODES)
def test_writes_reach_only_the_copy(isolate: bool, tmp_path: Path, monkeypatch) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    (workspace / "data.txt").write_text("original")
    (home / ".netrc").write_text(f"password {SECRET}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    outside = [tmp_path / "outside.txt"] + ([ROOT / f".m3-write-test-{os.getpid()}"] if isolate else [])
    original = workspace / "data.txt" if isolate else tmp_path / "elsewhere.txt"  # uncontained, it would write it
    run = asyncio.run(run_contained(
        [sys.executable, "-c", textwrap.dedent(WRITER), "{workspace}", str(original),
         str(home / ".netrc"), *map(str, outside)], timeout=20, workspace=workspace, isolate=isolate))
    tried = json.loads(run.stdout)
    assert tried["copy"] == "written" and tried["new"] == "written"
    assert {p.name: p.read_text() for p in workspace.iterdir()} == {"data.txt": "original"}
    if isolate:  # its files are its own: a write elsewhere fails or lands in its own tmpfs, never on the host
        assert (workspace / "data.txt").read_text() == "original" and tried["secret"] is None
        assert not any(p.exists() for p in outside)
    else:  # it writes where the user can; files it can read are scrubbed of the environment's secrets only
        assert tried["original"] == "written" and tried["outside"] == ["written"] and tried["secret"] == "password ***"


@pytest.mark.parametrize("isolate", MODES)
def test_network_only_without_bubblewrap(isolate: bool) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        run = contained(f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
                print("connected")
            except OSError as exc:
                print(type(exc).__name__)
            """, isolate=isolate)
    assert run.stdout.strip() == ("ConnectionRefusedError" if isolate else "connected")


def test_limits_apply() -> None:
    run = contained("""
        import sys
        try:
            open("big", "wb").write(b"x" * (3 << 20))
        except OSError as exc:
            print("write:", exc.errno == 27)
        try:
            block = bytearray(600 << 20)
        except MemoryError:
            print("memory: refused")
        """, isolate=None, limits=Limits(memory=400 << 20, file_size=1 << 20))
    assert run.stdout.splitlines() == ["write: True", "memory: refused"]


def test_the_result_comes_from_its_descriptor_alone() -> None:
    run = contained("""
        import os, sys
        open("output.json", "w").write('{"result": [1]}')  # a file is never read as its result
        os.write(int(sys.argv[1]), b"[" + b"1," * 600 + b"1]")
        """, isolate=None, limits=Limits(result=1000))
    assert run.status == 0 and run.result is None  # over the limit
    run = contained("open('output.json', 'w').write('{\"result\": [1]}')", isolate=None)
    assert run.status == 0 and run.result == b""


def test_a_command_that_cannot_start_is_an_error() -> None:
    run = asyncio.run(run_contained(["/no/such/program"], timeout=5, isolate=None))
    assert run.error is not None and run.error.startswith("cannot start /no/such/program: ")
    assert run.status is None and not run.timed_out


def test_settings_are_checked(tmp_path: Path) -> None:
    (tmp_path / "tasks.json").write_text("[]", encoding="utf-8")
    write_check(tmp_path, "ok.py", "def check(trajectory, workspace, tool_log):\n    return [1]\n")
    for options, field in (({"env": "OPENAI_API_KEY"}, "env"), ({"env": ["A=B"]}, "env"),
                           ({"timeout": -1}, "timeout"), ({"output_kb": 0}, "output_kb"),
                           ({"memory_mb": "4G"}, "memory_mb"), ({"disk_mb": 0}, "disk_mb"),
                           ({"bubblewrap": "yes"}, "bubblewrap")):
        with pytest.raises(InputError, match=rf"config: field 'evaluators.verifiers.{field}': "):
            judge_one(tmp_path, "ok.py", None, **options)
    assert judge_one(tmp_path, "ok.py", None, memory_mb=None, file_mb=None, disk_mb=None,
                     bubblewrap=False)["passed"] is True


HOSTILE = {  # task id -> (check file, body); stolen.txt beside them holds the key (a file the user has)
    "tb-01": ("env_key.py", "import os\ndef check(trajectory, workspace, tool_log):\n"
                            "    return [int(bool(os.environ['OPENAI_API_KEY']))]\n"),
    # its ancestors only (the judge among them when uncontained), not every process of the machine: another
    # process with OPENAI_API_KEY in its environment, listed first, made the test fail with a bare "assert False"
    "tb-02": ("proc_scan.py", "import os\ndef check(trajectory, workspace, tool_log):\n"
                              "    pid = os.getppid()\n"
                              "    while pid > 1:\n"
                              "        try:\n"
                              "            env = open(f'/proc/{pid}/environ', 'rb').read().split(b'\\0')\n"
                              "        except OSError:\n            env = []\n"
                              "        for item in env:\n"
                              "            if item.startswith(b'OPENAI_API_KEY='):\n"
                              "                raise RuntimeError(item.decode())\n"
                              "        pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
                              "    return [1]\n"),
    "tb-03": ("dies.py", "import os, sys\nfrom pathlib import Path\ndef check(trajectory, workspace, tool_log):\n"
                         "    key = Path(__file__).with_name('stolen.txt').read_text()\n"
                         "    print(key)\n    print('fatal:', key, file=sys.stderr)\n    os._exit(3)\n"),
    "tb-04": ("raises.py", "from pathlib import Path\ndef check(trajectory, workspace, tool_log):\n"
                           "    raise ValueError('key=' + Path(__file__).with_name('stolen.txt').read_text())\n"),
    "tb-05": ("passes.py", "from pathlib import Path\ndef check(trajectory, workspace, tool_log):\n"
                           "    stolen = Path(__file__).with_name('stolen.txt')\n"
                           "    print(stolen.read_text() if stolen.exists() else 'out of sight')\n"
                           "    return [int((workspace / 'out.txt').read_text() == 'ok')]\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("isolate", MODES)
def test_a_key_in_the_judges_environment_reaches_no_file(isolate: bool, tmp_path: Path, embedding_cache: Path) -> None:
    from script_runs import run_script

    demo = ROOT / "rollout" / "demo" / "tobench"
    data, results = tmp_path / "data", tmp_path / "results"
    (data / "checks").mkdir(parents=True)
    (data / "checks" / "stolen.txt").write_text(SECRET, encoding="utf-8")
    tasks = json.loads((demo / "tasks.json").read_text(encoding="utf-8"))
    for task in tasks:
        name, body = HOSTILE[task["id"]]
        (data / "checks" / name).write_text(body, encoding="utf-8")
        task["check"] = f"checks/{name}"
    (data / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
    results.mkdir()
    reference = json.loads((demo / "reference.json").read_text(encoding="utf-8"))
    (results / "scripted_test_mcp_fuzzy.json").write_text(json.dumps(reference), encoding="utf-8")
    for tid in HOSTILE:
        (results / "ws" / tid).mkdir(parents=True)
        (results / "ws" / tid / "out.txt").write_text("ok", encoding="utf-8")
    judge = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "judge.py"), "model=scripted", "judges=scripted", "data=tobench_demo",
         f"data.tasks={data / 'tasks.json'}", "evaluators=[verifiers]", f"results_dir={results}",
         f"workspace_dir={results / 'ws'}", f"tool_log_dir={results / 'logs'}", f"run_dir={tmp_path / 'run'}",
         f"cache_dir={tmp_path / 'cache'}", f"evaluators.verifiers.bubblewrap={str(isolate).lower()}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OPENAI_API_KEY": SECRET})
    assert judge.returncode == 0, judge.stderr[-2000:]
    entries = json.loads((results / "scripted_test_mcp_fuzzy_checks.json").read_text())["per_id"]
    assert entries["tb-01"]["error"] == "KeyError: 'OPENAI_API_KEY'"
    # with bubblewrap the judge's processes are out of sight; without, a check has no capability, so it cannot
    # read the environment of a judge that has some (run as root), and the key it reads from another's is scrubbed
    unreadable = isolate or os.geteuid() == 0
    assert {k: entries["tb-02"][k] for k in ("checks", "passed", "error")} == (
        {"checks": [1], "passed": True, "error": None} if unreadable
        else {"checks": None, "passed": None, "error": "RuntimeError: OPENAI_API_KEY=***"})
    # with bubblewrap a check sees its own file, not the others of its folder; without, what it read is scrubbed
    unseen = f"FileNotFoundError: [Errno 2] No such file or directory: '{data / 'checks' / 'stolen.txt'}'"
    assert entries["tb-03"]["error"] == (unseen if isolate else "the check process exited with status 3: fatal: ***")
    assert entries["tb-04"]["error"] == (unseen if isolate else "ValueError: key=***")
    assert entries["tb-05"]["passed"] is True
    score = tmp_path / "score"
    run_script("score", "sweep=leaderboard", "data=tobench_demo", f"results_dir={results}", f"output_dir={score}",
               f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=tmp_path)
    run_script("view", str(score), cwd=tmp_path)
    per_id = {e["id"]: e for e in json.loads((score / "scripted" / "results_eval.json").read_text())["per_id"]}
    assert per_id["tb-04"]["check_error"] == entries["tb-04"]["error"]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and data not in p.parents]
    assert {"results_eval.json", "results_eval.csv", "index.html"} <= {p.name for p in written}
    assert judge.stdout.count(SECRET) == judge.stderr.count(SECRET) == 0
    assert [p for p in written if SECRET.encode() in p.read_bytes()] == []


class Listener:
    """A host process's UNIX socket at `path`: it records every connection and the bytes sent to it."""

    def __init__(self, path: Path) -> None:
        import threading

        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen()
        self.server.settimeout(0.2)
        self.path, self.received, self.connections = path, b"", 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(2)
                try:
                    while chunk := conn.recv(65536):
                        self.received += chunk
                except OSError:
                    pass

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.server.close()
        self.path.unlink(missing_ok=True)


PEEK = """
    import os, socket, sys
    from pathlib import Path
    from _peek_helper import SOCKETS  # a module beside the check: its own files are there
    here = Path(__file__).parent
    found = []
    for path in (here / ".ssh" / "id_rsa", here / "notes.txt", Path("/root/.ssh/id_rsa")):
        try:
            found.append(path.read_text())
        except OSError as exc:
            found.append(type(exc).__name__)
    try:
        found.append(sorted(os.listdir(here)))
    except OSError as exc:
        found.append(type(exc).__name__)
    for path in SOCKETS:
        try:
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(path)
                client.sendall(("hello " + repr(found)).encode())
            found.append("connected")
        except OSError as exc:
            found.append(type(exc).__name__)
    print(found)
    print(found, file=sys.stderr)
    def check(trajectory, workspace, tool_log):
        raise RuntimeError(repr(found))
    """


@pytest.mark.slow
def test_a_tasks_file_in_the_home_shows_the_check_nothing_else(tmp_path: Path) -> None:
    """The tasks file and the check sit in the home beside ~/.ssh; a host process listens on sockets in
    it and under /run: through the judge app, with bubblewrap, the key is in no file and in neither
    stream, and no socket gets a connection."""
    if bubblewrap()[0] is None:
        pytest.skip(f"no bubblewrap sandbox here: {bubblewrap()[1]}")
    key = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAAB-fake-4711"
    home, results = tmp_path / "home", tmp_path / "results"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(key, encoding="utf-8")
    (home / "notes.txt").write_text(key, encoding="utf-8")
    listeners = [Listener(home / "agent.sock")]
    try:
        listeners.append(Listener(Path(f"/run/m3-check-test-{os.getpid()}.sock")))
    except OSError:  # /run not writable here: the tasks folder's socket alone
        pass
    try:
        (home / "_peek_helper.py").write_text(f"SOCKETS = {[str(x.path) for x in listeners]!r}\n")
        (home / "peek.py").write_text(textwrap.dedent(PEEK), encoding="utf-8")
        demo = ROOT / "rollout" / "demo" / "tobench"
        tasks = [{**t, "check": "peek.py"} for t in json.loads((demo / "tasks.json").read_text(encoding="utf-8"))]
        (home / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
        results.mkdir()
        (results / "scripted_test_mcp_fuzzy.json").write_bytes((demo / "reference.json").read_bytes())
        judge = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "judge.py"), "model=scripted", "judges=scripted",
             "data=tobench_demo", f"data.tasks={home / 'tasks.json'}", "evaluators=[verifiers]",
             f"results_dir={results}", f"workspace_dir={results / 'ws'}", f"tool_log_dir={results / 'logs'}",
             f"run_dir={tmp_path / 'run'}", f"cache_dir={tmp_path / 'cache'}", "evaluators.verifiers.bubblewrap=true"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": str(home)})
    finally:
        for listener in listeners:
            listener.close()
    assert judge.returncode == 0, judge.stderr[-2000:]
    entries = json.loads((results / "scripted_test_mcp_fuzzy_checks.json").read_text())["per_id"]
    refused = ["FileNotFoundError"] * 3 + [["_peek_helper.py", "peek.py"]] + ["FileNotFoundError"] * len(listeners)
    assert {e["error"] for e in entries.values()} == {f"RuntimeError: {refused!r}"}
    assert [(x.connections, x.received) for x in listeners] == [(0, b"")] * len(listeners)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and home not in p.parents]
    assert "scripted_test_mcp_fuzzy_checks.json" in {p.name for p in written}
    assert key not in judge.stdout + judge.stderr and [p for p in written if key.encode() in p.read_bytes()] == []


def test_a_workspace_linked_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tasks.json").write_text("[]", encoding="utf-8")
    write_check(tmp_path, "ok.py", "def check(trajectory, workspace, tool_log):\n    return [1]\n")
    home, workspaces = tmp_path / "home", tmp_path / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("private")
    workspaces.mkdir()
    (workspaces / "t1").symlink_to(home)
    with pytest.raises(InputError, match=rf"^{workspaces / 't1'}: id t1: is a symbolic link to {home}, out of the "
                                         rf"workspace folder {workspaces} "):
        judge_one(tmp_path, "ok.py", workspaces / "t1")
    (workspaces / "t1").unlink()
    (workspaces / "real").mkdir()
    (workspaces / "t1").symlink_to(workspaces / "real")  # a link inside the folder is followed
    assert judge_one(tmp_path, "ok.py", workspaces / "t1")["passed"] is True


FILLER = """
    import os, sys
    written = 0
    tmp = "/tmp" if os.environ["TMPDIR"].startswith("/tmp/tmp") else os.environ["TMPDIR"]  # the host's: not there
    for n in range(300):  # 1 MB at a time into its job folder, its home and /tmp, 300 MB in all
        folder = (".", os.environ["HOME"], tmp)[n % 3]
        try:
            with open(os.path.join(folder, f"fill-{n}"), "wb") as handle:
                handle.write(b"x" * (1 << 20))
            written += 1
        except OSError:
            pass
        print(written, flush=True)
    """


@pytest.mark.parametrize("isolate", MODES)
def test_the_files_of_a_check_are_capped_in_total(isolate: bool, tmp_path: Path) -> None:
    run = contained(FILLER, isolate=isolate, limits=Limits(file_size=8 << 20, disk=16 << 20))
    assert run.over_disk and not run.timed_out
    if isolate:  # a tmpfs of 16 MB (and its inputs): nothing more is ever stored
        assert int(run.stdout.split()[-1]) <= 17
    (tmp_path / "tasks.json").write_text("[]", encoding="utf-8")
    write_check(tmp_path, "fills.py", "import runpy\ndef check(trajectory, workspace, tool_log):\n"
                f"    exec({textwrap.dedent(FILLER)!r})\n    return [1]\n")
    entry = judge_one(tmp_path, "fills.py", None, disk_mb=16, file_mb=8, bubblewrap=isolate)
    assert entry["error"] == "its files went over the disk limit of 16 MB (disk_mb)"



FORGER = """
import ctypes, json, os, stat, sys, time
from pathlib import Path

FORGED = [b'0 0 0 0\\noutput.json 15\\n{"result": [1]}', b'0 0 0 0\\nresult 15\\n{"result": [1]}',
          b'{"result": [1]}']  # the supervisor's report (the build before's, this one's) and a check caller's result


def forge(fd):
    for data in FORGED:
        os.write(fd, data)


def reopened(pid):
    \"\"\"Reopen every pipe, socket and anonymous file of `pid` through /proc and write a passing report.\"\"\"
    reached = []
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return reached
    for name in names:
        try:
            kind = os.readlink(f"/proc/{pid}/fd/{name}")
            if not kind.startswith(("pipe:", "socket:", "/memfd:")):
                continue
            fd = os.open(f"/proc/{pid}/fd/{name}", os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            forge(fd)
            reached.append(f"{pid}: /proc fd {name} ({kind})")
        except OSError:
            pass
        finally:
            os.close(fd)
    return reached


def taken(pid):
    \"\"\"Take every descriptor of `pid` (pidfd_getfd) and write a passing report into it.\"\"\"
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return []
    reached = []
    for target in range(64):
        fd = ctypes.CDLL(None).syscall(438, pidfd, target, 0)  # pidfd_getfd
        if fd < 0:
            continue
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:"):
                forge(fd)
                reached.append(f"{pid}: taken fd {target}")
        except OSError:
            pass
        finally:
            os.close(fd)
    os.close(pidfd)
    return reached


if __name__ == "__main__":  # a program the check runs (the agent's own, say): it forges its parent's result
    check_process = int(sys.argv[1])
    reached = reopened(check_process) + taken(check_process)
    Path("agent-tried").write_text(json.dumps(reached))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # and a passing result file, written again and again
        Path("output.json").write_text('{"result": [1]}')
        time.sleep(0.001)
"""

FORGES = """
import json, os, subprocess, sys, time
from pathlib import Path
import _forger


def check(trajectory, workspace, tool_log):
    reached = _forger.reopened(os.getppid()) + _forger.taken(os.getppid())  # its supervisor
    Path("output.json").write_text('{"result": [1]}')
    subprocess.Popen([sys.executable, _forger.__file__, str(os.getpid())], start_new_session=True)
    deadline = time.monotonic() + 10
    while not Path("agent-tried").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)
    reached += json.loads(Path("agent-tried").read_text() or "[]")
    raise RuntimeError("raised after forging " + json.dumps(reached))
"""


@pytest.mark.parametrize("isolate", MODES)
def test_a_check_cannot_forge_its_report(isolate: bool, tmp_path: Path) -> None:
    """A check that raised, after writing a passing report into every descriptor of its supervisor it could
    reopen through /proc/<ppid>/fd or take (pidfd_getfd), and after starting a program that does the same to
    the check's own process and writes a passing output.json again and again: it comes back raised, and it
    reached nothing (the code before: ``passed: true``)."""
    (tmp_path / "tasks.json").write_text("[]", encoding="utf-8")
    write_check(tmp_path, "_forger.py", FORGER)
    write_check(tmp_path, "forges.py", FORGES)
    entry = judge_one(tmp_path, "forges.py", None, bubblewrap=isolate)
    assert entry == {"check": "forges.py", "checks": None, "passed": None,
                     "error": "RuntimeError: raised after forging []"}


SPECIAL = """
import asyncio, json, os, socket, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from test_check_runner import judge_one
folder, workspace = Path(sys.argv[2]), Path(sys.argv[3])
os.mkfifo(workspace / "fifo")
with socket.socket(socket.AF_UNIX) as listener:
    listener.bind(str(workspace / "sock"))
(workspace / "sub").mkdir()
os.mkfifo(workspace / "sub" / "deeper")
(workspace / "link").symlink_to(Path(sys.argv[4]))
started = time.monotonic()
entry = judge_one(folder, "reads.py", workspace, timeout=5, bubblewrap=sys.argv[5] == "1")
print(json.dumps({"entry": entry, "seconds": time.monotonic() - started}))
"""


@pytest.mark.parametrize("isolate", MODES)
def test_special_files_in_a_workspace_are_left_out_never_opened(isolate: bool, tmp_path: Path) -> None:
    """A FIFO (nobody writes it), a socket, a FIFO a folder down and a link to a key in a task's workspace:
    the check runs on a copy without them, within its time limit, and its entry names them (the code before
    hung forever opening the FIFO)."""
    (tmp_path / "tasks.json").write_text("[]", encoding="utf-8")
    write_check(tmp_path, "reads.py", """
        def check(trajectory, workspace, tool_log):
            return [sorted(p.name for p in workspace.rglob("*")) == ["out.txt", "sub"],
                    (workspace / "out.txt").read_text() == "ok"]
        """)
    workspace, key = tmp_path / "ws" / "t1", tmp_path / "id_rsa"
    workspace.mkdir(parents=True)
    (workspace / "out.txt").write_text("ok")
    key.write_text("-----BEGIN KEY----- canary")
    done = subprocess.run([sys.executable, "-c", SPECIAL, str(Path(__file__).parent), str(tmp_path), str(workspace),
                           str(key), str(int(isolate))], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["entry"] == {"check": "reads.py", "checks": [1, 1], "passed": True, "error": None,
                            "reason": "not in the workspace's copy: fifo (a FIFO), link (a symbolic link), sock (a "
                                      "socket), sub/deeper (a FIFO) (links, FIFOs, sockets and devices are never "
                                      "copied)"}
    assert out["seconds"] < 5 and "canary" not in done.stdout + done.stderr


@pytest.mark.skipif(bubblewrap()[0] is None, reason=f"no bubblewrap sandbox here: {bubblewrap()[1]}")
def test_a_helper_flipping_to_a_link_never_shows_the_sandbox_its_target(tmp_path: Path) -> None:
    """A helper module the check imports flips, in a thread, between a real file and a link to a key outside
    the tasks folder while the check is run again and again; the check raises with what it reads at the
    helper's path: the key is never in any entry, nor in the check's output (the code before bound the link's
    target, checked a moment earlier as a file of the tasks folder)."""
    import threading

    canary = "-----BEGIN OPENSSH PRIVATE KEY----- canary-4711"
    (tmp_path / "home").mkdir()
    key = tmp_path / "home" / "id_rsa"
    key.write_text(canary)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "tasks.json").write_text("[]", encoding="utf-8")
    write_check(tasks, "peeks.py", """
        from pathlib import Path
        def never():
            import _helper  # a helper of its own, so it is in its sandbox
        def check(trajectory, workspace, tool_log):
            raise RuntimeError(Path(__file__).with_name("_helper.py").read_text())
        """)
    helper = tasks / "_helper.py"
    helper.write_text("VALUE = 1\n")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            (tasks / "swap").symlink_to(key)
            os.replace(tasks / "swap", helper)
            (tasks / "swap").write_text("VALUE = 1\n")
            os.replace(tasks / "swap", helper)

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        entries = [judge_one(tasks, "peeks.py", None, bubblewrap=True) for _ in range(16)]
    finally:
        stop.set()
        flipper.join()
    errors = {e["error"] for e in entries}
    assert all(canary not in str(e) for e in entries), errors
    assert errors <= {"RuntimeError: VALUE = 1", f"cannot copy its inputs: {helper}: leaves the folder",
                      f"cannot copy its inputs: {helper}: a symbolic link",
                      f"FileNotFoundError: [Errno 2] No such file or directory: '{helper}'"}, errors


def test_the_copy_of_the_workspace_counts_against_the_time_limit(tmp_path: Path, monkeypatch) -> None:
    """A workspace on slow storage (each file's copy made to take 0.4 s): with a limit of 1.5 s the check
    times out during the copy, within its limit, and never starts (the code before copied it all first)."""
    from engine.judging.sandbox import files as _check_files

    slow_copy = _check_files._copy_file

    def slow(source: int, target: int, deadline: float) -> None:
        time.sleep(0.4)
        slow_copy(source, target, deadline)

    monkeypatch.setattr(_check_files, "_copy_file", slow)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for n in range(10):
        (workspace / f"part-{n}.txt").write_text("data")
    started = time.monotonic()
    run = asyncio.run(run_contained([sys.executable, "-c", "print('started')"], timeout=1.5, workspace=workspace,
                                    isolate=False))
    assert run.timed_out and run.status is None and run.stdout == ""
    assert time.monotonic() - started < 2.5
