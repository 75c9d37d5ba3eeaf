"""Hostile files: N mutated inputs per storage parser, and what each parser did with them.

    python -m bench.reliability [--inputs N] [--seed S] [--only TARGET ...]

The parsers, seeds, mutations and the judge are those of ``tests/reliability/hostile.py``
(the seeds are files icepark writes into a scratch folder, plus the conformance fixtures of
``../shared/conformance`` where present). Prints one row per parser: inputs run, inputs that
parsed into a usable result, inputs refused with a typed error naming the file, the slowest
input (CPU seconds) and the highest peak memory of one input (the larger of tracemalloc's
peak and the growth of the process's peak resident size). A parser that breaks the contract
(another exception, over 1 s or 256 MB, an unusable result) stops its row with the failure,
and the input is saved.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from hostile import (  # noqa: E402
    MEMORY_LIMIT,
    TARGETS,
    TIME_LIMIT,
    HostileInputFailure,
    Stats,
    build_corpus,
    fuzz,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=2000, help="inputs per parser")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the mutations")
    parser.add_argument("--only", action="append", choices=sorted(TARGETS))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    corpus = build_corpus(Path(tempfile.mkdtemp(prefix="icepark-reliability-")))
    print(
        f"{args.inputs} inputs per parser, seed {args.seed}; limits {TIME_LIMIT:.0f} s CPU and "
        f"{MEMORY_LIMIT // 2**20} MB per input\n"
    )
    print("| parser | seeds | inputs | parsed | typed errors | slowest | peak memory |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    failed = []
    for name in args.only or list(TARGETS):
        stats = Stats()
        try:
            fuzz(TARGETS[name], corpus, args.inputs, random.Random(args.seed), stats)
        except HostileInputFailure as exc:
            failed.append(str(exc))
        print(
            f"| {name} | {len(corpus.seeds[name])} | {stats.inputs:,} | {stats.parsed:,} | "
            f"{stats.errors:,} | {stats.slowest * 1000:.1f} ms | "
            f"{stats.peak_bytes / 2**20:.1f} MB |" + (" **failed**" if stats.failures else "")
        )
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    for problem in failed:
        print(f"FAILED: {problem}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
