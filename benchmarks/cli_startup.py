"""How fast the ``harnessed`` command starts: ``--version``, ``--help`` and the chat prompt.

Each figure is the median wall time of ``--runs`` fresh processes (the first run of each is
thrown away, so the OS file cache is warm). ``python -c pass`` is the floor: the interpreter
and the site packages' start-up, which no code of harnessed can shorten. "chat prompt" is the
time from spawning ``harnessed chat --demo`` in a pseudo-terminal until its prompt is drawn
(the scripted demo model: no key, no network), then the chat is left with Ctrl-D.

    python benchmarks/cli_startup.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
PROMPT = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"


def _env(home: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": SRC,
        "XDG_DATA_HOME": home,
        "TERM": "xterm",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }


def _process(args: list[str], env: dict[str, str]) -> Callable[[], float]:
    def once() -> float:
        start = time.perf_counter()
        subprocess.run(args, env=env, stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    return once


def _chat_prompt(env: dict[str, str]) -> Callable[[], float]:
    import pexpect

    def once() -> float:
        start = time.perf_counter()
        child = pexpect.spawn(
            sys.executable,
            ["-m", "harnessed.cli", "chat", "--demo", "--no-history"],
            env=env,
            encoding="utf-8",
            timeout=60,
            dimensions=(40, 120),
        )
        child.expect(PROMPT)
        took = time.perf_counter() - start
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        return took

    return once


def _median(run: Callable[[], float], runs: int) -> float:
    run()  # warm the file cache
    return statistics.median(run() for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = _env(home)
        cli = [sys.executable, "-m", "harnessed.cli"]
        rows = [
            ("python -c pass", _process([sys.executable, "-c", "pass"], env)),
            ("harnessed --version", _process([*cli, "--version"], env)),
            ("harnessed --help", _process([*cli, "--help"], env)),
            ("harnessed chat --demo: prompt", _chat_prompt(env)),
        ]
        results = [(name, _median(run, options.runs)) for name, run in rows]
    floor = results[0][1]
    print(f"{'what':<32} {'median ms':>10} {'over python -c pass':>20}")
    for name, seconds in results:
        extra = "" if name.startswith("python") else f"{(seconds - floor) * 1000:+.0f} ms"
        print(f"{name:<32} {seconds * 1000:>10.0f} {extra:>20}")


if __name__ == "__main__":
    main()
