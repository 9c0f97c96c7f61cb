"""What do skills cost per call?

For workspaces with 0, 20, 200 and 1,000 skills, prints:

* ``call, no skills cap`` / ``call, skills``: the median of a real ``agent.call`` (scripted model,
  default durable stores in a local workspace) without and with the ``Skills`` capability;
* ``warm scan``: the hash-gated rescan when nothing changed (a listing and one stat per skill;
  no file is read or parsed — the ``reads`` column proves it);
* ``one edited``: the rescan after one ``SKILL.md`` changed (exactly one file read);
* ``cold scan``: the first scan (every file read and parsed).

    python benchmarks/skills_overhead.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from harnessed import HarnessAgent, RuntimeContext
from harnessed.models import ScriptedModel
from harnessed.skills import Skills

SIZES = (0, 20, 200, 1_000)
ROUNDS = 30
CTX = RuntimeContext("u", "s")


def write_skills(root: Path, n: int) -> None:
    for i in range(n):
        folder = root / "skills" / f"skill-{i:04d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Handles chore {i}, with a realistic "
            "sentence or two about when to use it and what it produces.\nlicense: MIT\n---\n"
            + "Step by step instructions.\n"
            * 40
        )


async def median_call(agent: HarnessAgent, model: ScriptedModel) -> float:
    times = []
    for _ in range(ROUNDS):
        model.add("ok")
        start = time.perf_counter()
        await agent.call("hello", CTX)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def measure(n: int) -> tuple[float, float, float, float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_skills(root, n)
        plain_model = ScriptedModel()
        plain = HarnessAgent("plain", plain_model, workspace=root, memory=False)
        base = await median_call(plain, plain_model)
        model = ScriptedModel()
        skills = Skills()
        agent = HarnessAgent("bench", model, workspace=root, memory=False, skills=skills)
        start = time.perf_counter()
        await skills.available(CTX)
        cold = (time.perf_counter() - start) * 1000
        with_skills = await median_call(agent, model)
        reads = skills.catalog.reads
        warm = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            await skills.available(CTX)
            warm.append(time.perf_counter() - start)
        warm_reads = skills.catalog.reads - reads
        edited = 0.0
        if n:
            path = root / "skills" / "skill-0000" / "SKILL.md"
            path.write_text(path.read_text() + "one more line\n")
            os.utime(path, (1, 1))
            start = time.perf_counter()
            await skills.available(CTX)
            edited = (time.perf_counter() - start) * 1000
        await plain.close()
        await agent.close()
        return base, with_skills, statistics.median(warm) * 1000, edited, cold, warm_reads


async def main() -> None:
    print(
        f"{'skills':>7} | {'call, no skills cap':>19} | {'call, skills':>12} | "
        f"{'warm scan':>9} | {'reads':>5} | {'one edited':>10} | {'cold scan':>9}"
    )
    print("-" * 92)
    for n in SIZES:
        base, with_skills, warm, edited, cold, reads = await measure(n)
        print(
            f"{n:>7} | {base:>16.2f} ms | {with_skills:>9.2f} ms | {warm:>6.2f} ms | "
            f"{reads:>5} | {edited:>7.2f} ms | {cold:>6.2f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
