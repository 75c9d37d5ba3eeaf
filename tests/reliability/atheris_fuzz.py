"""Coverage-guided fuzzing of one storage parser with atheris (libFuzzer for Python), by hand:

    pip install atheris            # (the dev extra has it on Linux x86_64, Python 3.11)
    python tests/reliability/atheris_fuzz.py manifest -runs=100000
    python tests/reliability/atheris_fuzz.py --list

The first argument is a target of :mod:`hostile` (``--list`` prints them); the rest go to
libFuzzer (``-runs=N``, ``-max_total_time=S``, ``-timeout=S``, ``-rss_limit_mb=MB``,
``-jobs=N``, a corpus folder...). Seeds are the files of :func:`hostile.build_corpus` (written
to a scratch folder and given to libFuzzer as its starting corpus), icepark is instrumented
for coverage, and each input is judged by :func:`hostile.run_input`: a raw exception, a hang,
too much memory or an unusable result is a crash, which libFuzzer saves as ``crash-*`` for a
regression test (copy it to ``tests/reliability/crashes/<target>-<what>.<suffix>``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str]) -> None:
    from hostile import TARGETS

    if len(argv) < 2 or argv[1] not in TARGETS:
        print(__doc__ if len(argv) < 2 or argv[1] != "--list" else "", file=sys.stderr)
        print("targets: " + ", ".join(sorted(TARGETS)))
        raise SystemExit(0 if argv[1:2] == ["--list"] else 2)
    try:
        import atheris
    except ImportError:
        raise SystemExit("atheris is not installed: pip install atheris") from None

    import icepark.arrow.reader
    import icepark.manifest.columnar
    import icepark.manifest.pruned
    import icepark.puffin
    import icepark.spec.metadata
    import icepark.spec.view_metadata

    del icepark  # imported for the coverage instrumentation below: every parser loaded
    atheris.instrument_all()
    from hostile import build_corpus, run_input

    target = TARGETS[argv[1]]
    scratch = Path(tempfile.mkdtemp(prefix="icepark-atheris-"))
    corpus = build_corpus(scratch / "corpus")
    seeds = scratch / "seeds"
    seeds.mkdir()
    for i, data in enumerate(corpus.seeds[target.name]):
        (seeds / f"seed-{i}{target.suffix}").write_bytes(data)

    def one_input(data: bytes) -> None:
        run_input(target, corpus, data, 0)

    atheris.Setup([argv[0], *argv[2:], str(seeds)], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
