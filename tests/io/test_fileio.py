"""FileIO: local files and S3 (moto), create-if-absent, races, errors, the factory."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.fs
import pyarrow.parquet as pq
import pytest
from services import REPO_ROOT, create_bucket

from icepark.errors import (
    CatalogConfigError,
    FileAlreadyExistsError,
    NoSuchFileError,
    ValidationError,
)
from icepark.io import FileIO, InputFile, OutputFile, PyArrowFileIO, load_file_io

# ------------------------------------------------------------------------------------------------
# Both back ends run the same tests: `store` gives a FileIO and a function making locations.

Store = tuple[FileIO, Callable[[str], str]]


@pytest.fixture(
    params=["local", "file-uri", "file-uri-triple", pytest.param("s3", marks=pytest.mark.s3)]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    kind = request.param
    if kind == "s3":
        props: dict[str, str] = request.getfixturevalue("s3_endpoint")
        bucket = create_bucket(props)
        return load_file_io(props), lambda name: f"s3://{bucket}/warehouse/{name}"
    fileio = load_file_io({})
    base = str(tmp_path)
    if kind == "local":
        return fileio, lambda name: f"{base}/{name}"
    if kind == "file-uri":
        return fileio, lambda name: f"file:{base}/{name}"
    return fileio, lambda name: f"file://{base}/{name}"


def test_write_read_exists_length_delete(store: Store) -> None:
    fileio, loc = store
    location = loc("db/t/metadata/v1.metadata.json")
    out = fileio.new_output(location)
    assert isinstance(out, OutputFile)
    assert out.location == location
    assert not out.exists()
    assert not fileio.exists(location)

    out.write_bytes(b'{"format-version": 2}')

    inp = fileio.new_input(location)
    assert isinstance(inp, InputFile)
    assert inp.exists() and fileio.exists(location)
    assert inp.length() == 21
    assert inp.read_bytes() == b'{"format-version": 2}'
    assert out.to_input_file().read_bytes() == b'{"format-version": 2}'
    with inp.open() as stream:
        assert stream.seekable()
        stream.seek(2)
        assert stream.read(6) == b"format"
        stream.seek(-3, os.SEEK_END)
        assert stream.read() == b" 2}"

    fileio.delete(location)
    assert not fileio.exists(location)
    assert not inp.exists()


def test_known_length_is_trusted(store: Store) -> None:
    fileio, loc = store
    location = loc("data/f.bin")
    fileio.new_output(location).write_bytes(b"0123456789")
    inp = fileio.new_input(location, length=10)
    assert inp.length() == 10
    with inp.open() as stream:
        stream.seek(4)
        assert stream.read(3) == b"456"


def test_create_refuses_to_overwrite(store: Store) -> None:
    fileio, loc = store
    location = loc("metadata/v1.metadata.json")
    out = fileio.new_output(location)
    out.write_bytes(b"first")
    with pytest.raises(FileAlreadyExistsError, match=r"v1\.metadata\.json"):
        out.write_bytes(b"second")
    with pytest.raises(FileAlreadyExistsError, match=r"v1\.metadata\.json"):
        out.create()
    assert fileio.new_input(location).read_bytes() == b"first"
    out.write_bytes(b"third", overwrite=True)
    assert fileio.new_input(location).read_bytes() == b"third"


def test_create_refuses_when_the_file_appears_while_writing(store: Store) -> None:
    fileio, loc = store
    location = loc("metadata/v2.metadata.json")
    stream = fileio.new_output(location).create()
    stream.write(b"loser")
    fileio.new_output(location).write_bytes(b"winner")
    with pytest.raises(FileAlreadyExistsError, match=r"v2\.metadata\.json"):
        stream.close()
    assert fileio.new_input(location).read_bytes() == b"winner"


def test_nothing_is_visible_before_close(store: Store) -> None:
    fileio, loc = store
    location = loc("data/big.bin")
    with fileio.new_output(location).create() as stream:
        for _ in range(8):
            stream.write(b"x" * 100_000)
        assert stream.tell() == 800_000
        stream.flush()
        assert not fileio.exists(location)
        assert location not in [e.location for e in fileio.list_prefix(loc("data"))]
    assert fileio.new_input(location).length() == 800_000


def test_failed_write_leaves_nothing(store: Store) -> None:
    fileio, loc = store
    location = loc("data/broken.bin")
    with pytest.raises(RuntimeError), fileio.new_output(location).create() as stream:
        stream.write(b"partial")
        raise RuntimeError("writer failed")
    assert not fileio.exists(location)
    assert fileio.list_prefix(loc("data")) == []

    stream = fileio.new_output(location).create()
    stream.write(b"partial")
    stream.abort()
    assert stream.closed
    assert not fileio.exists(location)

    fileio.new_output(location).write_bytes(b"ok")
    with pytest.raises(RuntimeError), fileio.new_output(location).create(overwrite=True) as s:
        s.write(b"replacement")
        raise RuntimeError("writer failed")
    assert fileio.new_input(location).read_bytes() == b"ok"


def test_missing_files(store: Store) -> None:
    fileio, loc = store
    location = loc("nowhere/missing.avro")
    inp = fileio.new_input(location)
    assert not inp.exists()
    for call in (inp.read_bytes, inp.length, inp.open, lambda: fileio.delete(location)):
        with pytest.raises(NoSuchFileError, match=r"missing\.avro") as info:
            call()
        assert isinstance(info.value, FileNotFoundError)
        assert info.value.__cause__ is None


def test_list_and_delete_prefix(store: Store) -> None:
    fileio, loc = store
    names = ["t/metadata/v1.metadata.json", "t/data/a/1.parquet", "t/data/b/2.parquet"]
    for i, name in enumerate(names):
        fileio.new_output(loc(name)).write_bytes(b"x" * (i + 1))
    fileio.new_output(loc("t2/data/keep.parquet")).write_bytes(b"keep")

    entries = fileio.list_prefix(loc("t"))
    assert [e.location for e in entries] == sorted(loc(n) for n in names)
    assert {e.location: e.size for e in entries} == {loc(n): i + 1 for i, n in enumerate(names)}
    assert all(e.last_modified_ms and e.last_modified_ms > 1_600_000_000_000 for e in entries)
    # Listed locations are in the style they were asked in, and can be opened as such.
    assert fileio.new_input(entries[0].location).read_bytes() == b"xx"
    assert [e.location for e in fileio.list_prefix(loc("t/data/"))] == [
        loc("t/data/a/1.parquet"),
        loc("t/data/b/2.parquet"),
    ]
    assert fileio.list_prefix(loc("none")) == []
    # the same files a part at a time (a local folder a folder at a time), in no set order
    for where in ("t", "t/data/", "none"):
        listed = fileio.list_prefix(loc(where))
        assert sorted(fileio.iter_prefix(loc(where)), key=lambda e: e.location) == listed

    fileio.delete_prefix(loc("t"))
    assert fileio.list_prefix(loc("t")) == []
    assert not fileio.exists(loc(names[0]))
    assert fileio.exists(loc("t2/data/keep.parquet"))  # a sibling sharing the name's start
    fileio.delete_prefix(loc("t"))  # gone already: no error
    fileio.delete_prefix(loc("never-there"))


def test_parquet_through_streams(store: Store) -> None:
    fileio, loc = store
    location = loc("data/00000-0.parquet")
    table = pa.table({"id": pa.array(range(1000), pa.int64()), "s": [str(i) for i in range(1000)]})
    with fileio.new_output(location).create() as stream:
        pq.write_table(table, stream)
    inp = fileio.new_input(location)
    with inp.open() as stream:
        assert pq.read_table(stream).equals(table)
    with inp.open() as stream:
        assert pq.ParquetFile(stream).metadata.num_rows == 1000


def test_concurrent_threads_one_winner(store: Store) -> None:
    fileio, loc = store
    location = loc("metadata/v7.metadata.json")
    n = 8
    barrier = threading.Barrier(n)
    results: list[str] = [""] * n

    def create(i: int) -> None:
        payload = bytes([65 + i]) * 300_000
        barrier.wait()
        try:
            fileio.new_output(location).write_bytes(payload)
            results[i] = "won"
        except FileAlreadyExistsError:
            results[i] = "lost"

    threads = [threading.Thread(target=create, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    content = fileio.new_input(location).read_bytes()
    assert len(content) == 300_000 and len(set(content)) == 1
    assert all(r in ("won", "lost") for r in results)
    if not location.startswith("s3://"):
        # Locally create-if-absent is atomic: exactly one winner, and it is the content.
        assert results.count("won") == 1
        assert content[0] == 65 + results.index("won")


# ------------------------------------------------------------------------------------------------
# Local-only behaviour


_RACER = """
import os, sys, time
from icepark.errors import FileAlreadyExistsError
from icepark.io import load_file_io
location, index, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = load_file_io({}).new_output(location)
payload = bytes([65 + index]) * 2_000_000
print("ready", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.0005)
try:
    with out.create() as stream:
        for i in range(0, len(payload), 65536):
            stream.write(payload[i : i + 65536])
    print("won")
except FileAlreadyExistsError:
    print("lost")
"""


def test_concurrent_processes_one_winner(tmp_path: Path) -> None:
    location = f"file:{tmp_path}/metadata/v3.metadata.json"
    n = 8
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *sys.path])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, location, str(i), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(n)
    ]
    for proc in procs:  # all imported and waiting: let them race
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.touch()
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes.append(out.strip())
    assert sorted(outcomes) == ["lost"] * (n - 1) + ["won"]
    winner = outcomes.index("won")
    content = (tmp_path / "metadata" / "v3.metadata.json").read_bytes()
    assert content == bytes([65 + winner]) * 2_000_000
    assert os.listdir(tmp_path / "metadata") == ["v3.metadata.json"]  # no temp files left


def test_local_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: str, dst: str) -> None:
        raise PermissionError(1, "Operation not permitted", src)

    monkeypatch.setattr(os, "link", no_link)
    fileio = PyArrowFileIO()
    location = str(tmp_path / "v1.json")
    fileio.new_output(location).write_bytes(b"content")
    assert fileio.new_input(location).read_bytes() == b"content"
    stream = fileio.new_output(location + ".other").create()
    stream.write(b"late")
    (tmp_path / "v1.json.other").write_bytes(b"early")
    with pytest.raises(FileAlreadyExistsError):
        stream.close()
    assert (tmp_path / "v1.json.other").read_bytes() == b"early"
    assert sorted(os.listdir(tmp_path)) == ["v1.json", "v1.json.other"]


def test_local_location_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fileio = load_file_io()
    (tmp_path / "a.txt").write_bytes(b"abc")
    for location in (
        f"{tmp_path}/a.txt",
        f"file:{tmp_path}/a.txt",
        f"file://{tmp_path}/a.txt",
        f"file://localhost{tmp_path}/a.txt",
        f"FILE:{tmp_path}/a.txt",
    ):
        assert fileio.new_input(location).read_bytes() == b"abc", location
    monkeypatch.chdir(tmp_path)
    assert fileio.new_input("a.txt").read_bytes() == b"abc"
    with pytest.raises(ValidationError, match="remote host"):
        fileio.new_input("file://otherhost/a.txt")


def test_local_fsync_and_folders(tmp_path: Path) -> None:
    fileio = load_file_io({"local.fsync": "true"})
    location = f"{tmp_path}/deep/er/x.bin"
    fileio.new_output(location).write_bytes(b"1")
    assert fileio.new_input(location).read_bytes() == b"1"
    with pytest.raises(NoSuchFileError, match="not a file"):
        fileio.new_input(str(tmp_path / "deep")).read_bytes()
    with pytest.raises(NoSuchFileError):
        fileio.delete(str(tmp_path / "deep"))
    assert not fileio.exists(str(tmp_path / "deep"))
    with pytest.raises(ValidationError, match="root"):
        fileio.delete_prefix("file:///")


def test_unclosed_stream_is_not_published(tmp_path: Path) -> None:
    fileio = load_file_io()
    location = str(tmp_path / "dropped.bin")
    stream = fileio.new_output(location).create()
    stream.write(b"half")
    del stream
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------------
# S3 specifics


@pytest.mark.s3
def test_s3_schemes_and_bucket_root(s3_endpoint: dict[str, str]) -> None:
    bucket = create_bucket(s3_endpoint)
    fileio = load_file_io(s3_endpoint, f"s3://{bucket}/t")
    fileio.new_output(f"s3a://{bucket}/t/x.json").write_bytes(b"x")
    for scheme in ("s3", "s3a", "s3n"):
        assert fileio.new_input(f"{scheme}://{bucket}/t/x.json").read_bytes() == b"x"
    assert [e.location for e in fileio.list_prefix(f"s3n://{bucket}/t")] == [
        f"s3n://{bucket}/t/x.json"
    ]
    fileio.delete_prefix(f"s3://{bucket}")  # empties the bucket, keeps it
    assert fileio.list_prefix(f"s3://{bucket}") == []
    fileio.new_output(f"s3://{bucket}/again.json").write_bytes(b"y")
    assert fileio.exists(f"s3://{bucket}/again.json")


@pytest.mark.s3
def test_s3_missing_bucket(s3_endpoint: dict[str, str]) -> None:
    fileio = load_file_io(s3_endpoint)
    with pytest.raises(NoSuchFileError, match="no-such-bucket"):
        fileio.new_input("s3://no-such-bucket-icepark/x.json").read_bytes()
    assert not fileio.exists("s3://no-such-bucket-icepark/x.json")


@pytest.mark.s3
def test_s3_environment_fallback(
    s3_endpoint: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = create_bucket(s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_endpoint["s3.access-key-id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_endpoint["s3.secret-access-key"])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_endpoint["s3.endpoint"])
    fileio = PyArrowFileIO({})
    fileio.new_output(f"s3://{bucket}/env.json").write_bytes(b"env")
    assert fileio.new_input(f"s3://{bucket}/env.json").read_bytes() == b"env"


@pytest.mark.s3
def test_s3_filesystems_are_cached_per_bucket(s3_endpoint: dict[str, str]) -> None:
    fileio = PyArrowFileIO(s3_endpoint)
    a, b = create_bucket(s3_endpoint), create_bucket(s3_endpoint)
    fileio.new_output(f"s3://{a}/1").write_bytes(b"1")
    fileio.new_output(f"s3://{a}/2").write_bytes(b"2")
    fileio.new_output(f"s3://{b}/1").write_bytes(b"3")
    assert sorted(fileio._filesystems) == sorted([("s3", a), ("s3", b)])


def test_s3_bad_credentials_config() -> None:
    fileio = PyArrowFileIO({"s3.access-key-id": "only-the-key"})
    with pytest.raises(CatalogConfigError, match="secret-access-key"):
        fileio.exists("s3://bucket/key")


# ------------------------------------------------------------------------------------------------
# Factory and pickling


class _CustomIO(PyArrowFileIO):
    pass


def test_load_file_io_impl() -> None:
    assert type(load_file_io()) is PyArrowFileIO
    assert type(load_file_io({}, "s3://bucket/t")) is PyArrowFileIO
    custom = load_file_io({"io-impl": f"{__name__}._CustomIO", "k": "v"})
    assert type(custom) is _CustomIO and custom.properties["k"] == "v"
    assert type(load_file_io({"py-io-impl": f"{__name__}._CustomIO"})) is _CustomIO
    with pytest.raises(CatalogConfigError):
        load_file_io({"io-impl": "no.such.module.FileIO"})
    with pytest.raises(CatalogConfigError):
        load_file_io({"io-impl": "NoDots"})
    with pytest.raises(CatalogConfigError, match="not a FileIO"):
        load_file_io({"io-impl": "collections.OrderedDict"})
    with pytest.raises(ValidationError, match="unsupported file system scheme 'gs'"):
        load_file_io({}, "gs://bucket/t")
    with pytest.raises(ValidationError):
        load_file_io().new_input("")


def test_filesystem_for_pyarrow(tmp_path: Path) -> None:
    fileio = load_file_io()
    fs, path = fileio.filesystem(f"file:{tmp_path}/x/")
    assert path == f"{tmp_path}/x"
    fs.create_dir(path)
    assert fs.get_file_info(path).type == pyarrow.fs.FileType.Directory
    s3fs, key = PyArrowFileIO({"s3.region": "us-east-1"}).filesystem("s3a://bucket/a/b")
    assert key == "bucket/a/b" and s3fs.type_name == "s3"


def test_pickle_roundtrip(tmp_path: Path) -> None:
    fileio = PyArrowFileIO({"s3.region": "us-east-1"})
    location = str(tmp_path / "p.bin")
    fileio.new_output(location).write_bytes(b"p")
    copy = pickle.loads(pickle.dumps(fileio))
    assert copy.properties == {"s3.region": "us-east-1"}
    assert copy.new_input(location).read_bytes() == b"p"


@pytest.mark.parametrize(
    ("location", "local"),
    [
        ("/tmp/wh/t/metadata/m.avro", True),
        ("file:/tmp/wh/m.avro", True),
        ("file:///tmp/wh/m.avro", True),
        ("relative/dir/m.avro", True),
        ("C:/data/m.avro", True),  # a drive letter, not a scheme
        ("s3://bucket/wh/m.avro", False),
        ("s3a://bucket/wh/m.avro", False),
        ("gs://bucket/m.avro", False),
    ],
)
def test_is_local_location(location: str, local: bool) -> None:
    from icepark.io import is_local_location

    assert is_local_location(location) is local
