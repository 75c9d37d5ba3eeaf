"""The crash campaign at a chosen scale, with its outcome per operation as a table.

    python -m bench.crash_campaign                 # 10 random-instant trials per op/catalog
    python -m bench.crash_campaign --trials 50     # more
    python -m bench.crash_campaign --no-spark      # without the Spark operations

Runs ``tests/reliability`` (the crash campaign, the storage faults and the mixed workload)
through pytest with ``ICEPARK_CRASH_TRIALS`` set, every trial logged, then prints per
operation: trials run, how many the kill interrupted, how many left the rows before and after
the operation, and the consistent ones (a trial that is not consistent fails the run, so the
two columns are equal when the run passes). Markdown, for bench/README.md and the README.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "trials.jsonl"
        env = {
            **os.environ,
            "ICEPARK_CRASH_TRIALS": str(args.trials),
            "ICEPARK_RELIABILITY_LOG": str(log),
        }
        selection = ["tests/reliability/test_crash_campaign.py"]
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection]
        if args.no_spark:
            command += ["-k", "not spark"]
        start = time.monotonic()
        result = subprocess.run(command, cwd=ROOT, env=env, check=False)
        seconds = time.monotonic() - start
        trials = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for t in trials:
        row = table[t["op"]]
        row["trials"] += 1
        row[t["ended"]] += 1
        row[t["landed"]] += 1
        row[t["catalog"]] += 1
    print(f"\n{len(trials)} trials in {seconds:.0f} s; pytest exit code {result.returncode}\n")
    print("| operation | trials | killed | rows before | rows after | consistent | catalogs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for op, row in sorted(table.items()):
        catalogs = ", ".join(
            f"{kind} {row[kind]}" for kind in ("sqlite", "filesystem", "postgres") if row[kind]
        )
        print(
            f"| {op} | {row['trials']} | {row['killed']} | {row['before']} | {row['after']} | "
            f"{row['trials'] if result.returncode == 0 else '?'} | {catalogs} |"
        )
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
