"""What pyarrow's file writers write to: a FileIO output stream, which pyarrow must not
close (the FileIO publishes the file on its own close), and which drops writes once the file
is being aborted (``discard``), so that an abort never publishes half a file."""

from __future__ import annotations

from typing import Any

from icepark.io.fileio import OutputStream

__all__ = ["StreamSink"]


class StreamSink:
    """A file-like object over ``stream`` for ``pyarrow.parquet.ParquetWriter`` and
    ``pyarrow.orc.ORCWriter``."""

    def __init__(self, stream: OutputStream) -> None:
        self._stream = stream
        self.discard = False

    def write(self, data: Any) -> int:
        if self.discard:
            return len(memoryview(data))
        return self._stream.write(data)

    def tell(self) -> int:
        return self._stream.tell()

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    @property
    def closed(self) -> bool:
        return False

    def writable(self) -> bool:
        return True
