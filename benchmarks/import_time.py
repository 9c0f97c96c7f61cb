"""How long does Python take to start with harnessed imported?

Runs each snippet in a fresh interpreter ``--runs`` times (interleaved, so every snippet sees
the same machine load) and prints the median wall time and the median CPU time (user + system
of the child: less sensitive to a busy machine than wall time). ``python -c pass`` is the floor
this interpreter and its ``site`` set (installed ``.pth`` files included); "added" is each
snippet's median minus that floor. Bytecode is compiled first (``compileall``), as a normal
install does, so the first run does not measure the compiler.

Target (issue 10): ``python -c 'import harnessed'`` ≤ 150 ms.

    python benchmarks/import_time.py [--runs 20]
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import harnessed

SNIPPETS = {
    "python -c pass": "pass",
    "import harnessed": "import harnessed",
    "from harnessed import HarnessAgent": "from harnessed import HarnessAgent",
    "HarnessAgent + ScriptedModel + RuntimeContext": (
        "from harnessed import HarnessAgent, RuntimeContext, ScriptedModel"
    ),
    "import harnessed.cli (harnessed --help)": "import harnessed.cli",
}


def run_once(code: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    compileall.compile_dir(str(Path(harnessed.__file__).parent), quiet=1)
    walls: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    cpus: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    for code in SNIPPETS.values():  # warm the page cache once
        run_once(code)
    for _ in range(args.runs):
        for name, code in SNIPPETS.items():
            wall, cpu = run_once(code)
            walls[name].append(wall)
            cpus[name].append(cpu)
    floor_wall = statistics.median(walls["python -c pass"])
    floor_cpu = statistics.median(cpus["python -c pass"])
    print(
        f"Python {sys.version.split()[0]}, {args.runs} runs each, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n"
    )
    header = f"{'snippet':<46} {'wall ms':>8} {'CPU ms':>7} {'added wall':>10} {'added CPU':>9}"
    print(header)
    print("-" * len(header))
    for name in SNIPPETS:
        wall = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        print(f"{name:<46} {wall:8.1f} {cpu:7.1f} {wall - floor_wall:10.1f} {cpu - floor_cpu:9.1f}")


if __name__ == "__main__":
    main()
