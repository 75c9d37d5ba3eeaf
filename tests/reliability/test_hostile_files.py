"""Hostile files: every storage parser, fed mutated copies of real files, answers with a result
it can use or a typed error naming the file, within a second and 256 MB per input.

The judge is :func:`hostile.run_input` (see :mod:`hostile`). ``make test`` runs a bounded,
derandomized number of inputs per parser; ``ICEPARK_FUZZ_EXAMPLES=N`` runs N random ones
per parser (each failure is shrunk by hypothesis and its input saved under
``$ICEPARK_FUZZ_CRASHES``, by default ``/tmp/icepark-fuzz``). The inputs that broke a parser
once live in ``crashes/`` and are replayed here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.hostile import (
    CONFORMANCE,
    TARGETS,
    Corpus,
    build_corpus,
    examples,
    fuzzing_hard,
    run_input,
    truncations,
)

CRASHES = Path(__file__).parent / "crashes"

# inputs per parser in `make test` (about 45 s for the whole folder)
_DEFAULT_EXAMPLES = {"manifest": 120, "filter": 200}
_EXAMPLES = 250

_BINARY = [name for name, t in TARGETS.items() if t.mutate.__name__ != "mutate_json"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeds(corpus: Corpus, name: str) -> None:
    """The seeds themselves: the files icepark wrote read; the conformance fixtures read or
    are refused with a typed error."""
    seeds = corpus.seeds[name]
    assert seeds, f"no seeds for {name}"
    outcomes = [run_input(TARGETS[name], corpus, data, i) for i, data in enumerate(seeds)]
    assert "parsed" in outcomes


def test_conformance_seeds_used(corpus: Corpus) -> None:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"no conformance corpus at {CONFORMANCE}")
    for name in ("table-metadata", "view-metadata", "puffin", "deletion-vector", "roaring64"):
        assert len(corpus.seeds[name]) > 3, name


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_truncated(corpus: Corpus, name: str) -> None:
    """The first seed cut at each of its first and last bytes and at offsets in between."""
    seed = corpus.seeds[name][0]
    for cut in truncations(seed):
        run_input(TARGETS[name], corpus, seed[:cut], 0)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_mutated(corpus: Corpus, name: str) -> None:
    target = TARGETS[name]
    seeds = corpus.seeds[name]

    @settings(
        max_examples=examples(_DEFAULT_EXAMPLES.get(name, _EXAMPLES)),
        deadline=None,  # the harness times each input itself, in CPU time
        derandomize=not fuzzing_hard(),
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(index=st.integers(0, len(seeds) - 1), rng=st.randoms(use_true_random=False))
    def feed(index: int, rng: object) -> None:
        run_input(target, corpus, target.mutate(seeds[index], rng), index)  # type: ignore[arg-type]

    feed()


def _crash_target(path: Path) -> str:
    return next(n for n in sorted(TARGETS, key=len, reverse=True) if path.name.startswith(n + "-"))


@pytest.mark.parametrize(
    "path", sorted(p for p in CRASHES.iterdir() if not p.name.startswith(".")), ids=lambda p: p.name
)
def test_crash_input(corpus: Corpus, path: Path) -> None:
    """An input that once broke its parser (a raw exception, a hang, gigabytes of memory or
    a result that did not read back) now reads or fails with a typed error naming the file."""
    run_input(TARGETS[_crash_target(path)], corpus, path.read_bytes())
