"""The commit retry policy: who retries how often, and how long each wait may be."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from icepark.table.transaction import RetryPolicy

PROPS = {
    "commit.retry.num-retries": "4",
    "commit.retry.min-wait-ms": "100",
    "commit.retry.max-wait-ms": "60000",
    "commit.retry.total-timeout-ms": "1800000",
}


@given(attempt=st.integers(1, 60))
def test_waits_stay_below_their_cap(attempt: int) -> None:
    policy = RetryPolicy(PROPS)
    growing = min(60000, 100 * 2 ** (attempt - 1))
    assert 0 <= policy.wait_ms(attempt, revalidates=True) <= growing
    # a commit that cannot conflict wins at its next turn: its wait stops growing at 4x min
    assert 0 <= policy.wait_ms(attempt, revalidates=False) <= min(growing, 400)


def test_waits_grow_for_commits_that_revalidate() -> None:
    policy = RetryPolicy(PROPS)
    late = [policy.wait_ms(10, revalidates=True) for _ in range(200)]
    assert max(late) > 400  # uniform below 51.2 s: some draw is above the append cap


def test_who_may_retry() -> None:
    policy = RetryPolicy(PROPS)
    assert policy.may_retry(4, 0, revalidates=True)
    assert not policy.may_retry(5, 0, revalidates=True)
    assert policy.may_retry(500, 1_000_000, revalidates=False)  # appends: until the timeout
    assert not policy.may_retry(2, 1_800_001, revalidates=False)
