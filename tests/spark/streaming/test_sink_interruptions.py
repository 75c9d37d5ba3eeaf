"""How ``write_stream``'s batch function reports a stop in the middle of a batch on a classic
session: Spark takes a Python ``foreachBatch`` error for a stop only if a pattern
(``StreamExecution.PROXY_ERROR``) finds an interruption's Java class after "An error occurred
while calling" in its text, and over a Py4J error's whole text (a Java stack trace) that
pattern overflows the stream thread's stack. The batch function therefore re-raises an
interruption as one short line, and anything else unchanged. Java exceptions are stood in
for by objects with the methods Py4J gives them."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from icepark.spark.streaming.sink import BatchCommitter, BatchInterruptedError

GROUP = "3f6c0f7e-5a0b-4c57-9d59-3b1e8d2a9c10"  # the query's run id, its jobs' group
# Spark 4's StreamExecution.PROXY_ERROR, as Python's re spells it
PROXY_ERROR = re.compile(
    r"py4j\.protocol\.Py4JJavaError: An error occurred while calling(.|\r\n|\r|\n)*"
    r"(java\.lang\.InterruptedException|java\.io\.InterruptedIOException"
    r"|java\.nio\.channels\.ClosedByInterruptException)"
)


class _JavaClass:
    def __init__(self, name: str) -> None:
        self.name = name

    def getName(self) -> str:
        return self.name


class _JavaThrowable:
    def __init__(self, name: str, message: str = "", cause: _JavaThrowable | None = None):
        self.cls, self.message, self.cause = _JavaClass(name), message, cause

    def getClass(self) -> _JavaClass:
        return self.cls

    def getMessage(self) -> str:
        return self.message

    def getCause(self) -> _JavaThrowable | None:
        return self.cause


class _Py4JError(Exception):
    """As ``py4j.protocol.Py4JJavaError``: the Java exception rides along."""

    def __init__(self, java: _JavaThrowable) -> None:
        super().__init__("py4j.protocol.Py4JJavaError: An error occurred while calling o7.parquet")
        self.java_exception = java


def _failing(error: Exception) -> BatchCommitter:
    committer = BatchCommitter(lambda: None, "append", None, "auto")  # type: ignore[arg-type,return-value]

    def commit(df: Any, batch_id: int) -> None:
        raise error

    committer._commit = commit  # type: ignore[method-assign]
    return committer


def _batch(group: str | None = GROUP) -> Any:
    """A batch DataFrame of a classic session whose thread runs jobs of ``group``."""
    context = SimpleNamespace(
        getLocalProperty=lambda key: group if key == "spark.jobGroup.id" else None
    )
    return SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=context))


def _cancelled(group: str = GROUP) -> _JavaThrowable:
    return _JavaThrowable(
        "org.apache.spark.SparkException",
        f"Job 12 cancelled part of cancelled job group {group}",
    )


def test_an_interruption_among_the_causes_is_one_line_spark_takes_for_a_stop() -> None:
    java = _JavaThrowable(
        "org.apache.spark.SparkException",
        "Job aborted",
        _JavaThrowable("java.io.InterruptedIOException", "interrupted"),
    )
    with pytest.raises(BatchInterruptedError) as caught:
        _failing(_Py4JError(java))(_batch(), 4)
    text = str(caught.value)
    assert "\n" not in text and "micro-batch 4" in text
    assert PROXY_ERROR.search(text).group(2) == "java.io.InterruptedIOException"  # type: ignore[union-attr]


def test_the_cancellation_of_the_querys_jobs_is_a_stop_too() -> None:
    """Spark cancels a stopped query's job group before it interrupts its thread, so the
    write can fail with the cancellation: Spark's own rule takes that for a stop, and so
    does the batch function, naming the class Spark's pattern looks for."""
    with pytest.raises(BatchInterruptedError) as caught:
        _failing(_Py4JError(_cancelled()))(_batch(), 9)
    text = str(caught.value)
    assert "cancelled" in text and "micro-batch 9" in text
    assert PROXY_ERROR.search(text).group(2) == "java.lang.InterruptedException"  # type: ignore[union-attr]
    wrapped = _JavaThrowable("org.apache.spark.SparkException", "Job aborted", _cancelled())
    with pytest.raises(BatchInterruptedError):  # found among the causes as well
        _failing(_Py4JError(wrapped))(_batch(), 9)


@pytest.mark.parametrize(
    ("java", "group"),
    [
        (_cancelled("another-query"), GROUP),  # another query's jobs
        (_cancelled(), None),  # no job group: not a streaming batch's job
        (_JavaThrowable("org.apache.spark.SparkException", f"Job 3 failed {GROUP}"), GROUP),
        (  # a cancellation with a cause is Spark's cause's to judge
            _JavaThrowable(
                "org.apache.spark.SparkException",
                f"Job 12 cancelled part of cancelled job group {GROUP}",
                _JavaThrowable("java.lang.IllegalStateException", "broken"),
            ),
            GROUP,
        ),
        (_JavaThrowable("java.io.FileNotFoundException", "gone"), GROUP),
    ],
)
def test_any_other_failure_is_raised_as_it_is(java: _JavaThrowable, group: str | None) -> None:
    error = _Py4JError(java)
    with pytest.raises(_Py4JError) as caught:
        _failing(error)(_batch(group), 1)
    assert caught.value is error


def test_an_error_of_python_is_raised_as_it_is() -> None:
    error = ValueError("bad value")
    with pytest.raises(ValueError) as caught:
        _failing(error)(_batch(), 1)
    assert caught.value is error
