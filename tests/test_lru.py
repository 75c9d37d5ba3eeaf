import threading
from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from icepark.lru import LruCache


def test_the_least_recently_used_goes_first() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2


def test_weights_bound_the_total_and_a_value_over_the_limit_is_not_kept() -> None:
    cache: LruCache[str, bytes] = LruCache(10, len)
    cache.put("a", b"xxxx")
    cache.put("b", b"xxxx")
    cache.put("c", b"xxxx")  # 12 > 10: "a" goes
    assert "a" not in cache and "b" in cache and "c" in cache
    assert cache.put("big", b"x" * 11) == b"x" * 11  # returned, not kept
    assert "big" not in cache and "b" in cache and "c" in cache
    cache.put("b", b"x")  # replacing a value re-weighs it
    cache.put("d", b"xxxxx")
    assert {k for k in "abcd" if k in cache} == {"b", "c", "d"}


def test_get_or_compute_computes_on_a_miss_only_and_keeps_no_none() -> None:
    cache: LruCache[str, int | None] = LruCache(4)
    calls: list[str] = []

    def compute(key: str, value: int | None) -> int | None:
        return cache.get_or_compute(key, lambda: calls.append(key) or value)

    assert compute("a", 1) == 1 and compute("a", 2) == 1
    assert compute("n", None) is None and compute("n", None) is None
    assert calls == ["a", "n", "n"]  # a None is computed again: it cannot be told from a miss
    cache.clear()
    assert len(cache) == 0 and compute("a", 3) == 3


@given(
    st.integers(1, 20),
    st.lists(
        st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 9), st.integers(1, 8)),
        max_size=60,
    ),
)
def test_it_behaves_as_an_ordered_dict_dropping_from_the_front(
    limit: int, operations: list[tuple[str, int, int]]
) -> None:
    cache: LruCache[int, int] = LruCache(limit, lambda v: v)
    model: OrderedDict[int, int] = OrderedDict()
    for op, key, value in operations:
        if op == "get":
            assert cache.get(key) == model.get(key)
            if key in model:
                model.move_to_end(key)
        else:
            model.pop(key, None)
            if value <= limit:
                model[key] = value
            while sum(model.values()) > limit:
                model.popitem(last=False)
            cache.put(key, value)
        assert [k for k in range(10) if k in cache] == sorted(model)
        assert len(cache) == len(model)


def test_eight_threads_keep_it_within_its_limit() -> None:
    cache: LruCache[int, int] = LruCache(100, lambda v: v % 7 + 1)
    errors: list[BaseException] = []

    def hammer(seed: int) -> None:
        try:
            for i in range(5000):
                key = (i * 31 + seed) % 300
                found = cache.get_or_compute(key, lambda k=key: k)
                assert found == key
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(k % 7 + 1 for k in range(300) if k in cache) <= 100
