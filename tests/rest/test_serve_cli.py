"""``icepark serve`` as a user runs it: a real process on a free loopback port, the loopback
rule without auth, ``serve hash-secret``, and the message when the server extra is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from icepark.cli.main import cli
from icepark.rest.server.security import verify_secret
from tests.rest.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:  # type: ignore[type-arg]
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_serve_process_with_oauth2(tmp_path: Path) -> None:
    principals = tmp_path / "principals.yaml"
    principals.write_text(
        "principals:\n  - {client-id: etl, client-secret: top-s3cret, grants: {'*': admin}}\n"
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ICEPARK_SERVE_TOKEN_KEY": "k1"}
    cmd = [
        sys.executable,
        "-c",
        "from icepark.cli.main import main; main()",
        "--uri",
        f"sqlite:///{tmp_path}/c.db",
        "--warehouse",
        str(tmp_path / "wh"),
        "serve",
        "--port",
        str(port),
        "--auth",
        "oauth2",
        "--principals",
        str(principals),
        "--prefix",
        "main",
    ]
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    if _get(base + "/healthz")[0] == 200:
                        break
                except OSError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            assert _get(base + "/v1/config")[0] == 401
            form = b"grant_type=client_credentials&client_id=etl&client_secret=top-s3cret"
            with urllib.request.urlopen(base + "/v1/oauth/tokens", data=form, timeout=5) as r:
                access = json.loads(r.read())["access_token"]
            auth = {"Authorization": f"Bearer {access}"}
            status, config = _get(base + "/v1/config", auth)
            assert status == 200 and config["overrides"] == {"prefix": "main"}
            assert _get(base + "/v1/main/namespaces", auth) == (200, {"namespaces": []})
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    text = log.read_text()
    assert f"http://127.0.0.1:{port}" in text  # how to connect
    assert '"operation": "get_token"' in text and '"principal": "etl"' in text
    assert "top-s3cret" not in text and access not in text


def test_serve_refuses_open_host_without_auth(tmp_path: Path) -> None:
    args = ["--uri", f"sqlite:///{tmp_path}/c.db", "serve", "--host", "0.0.0.0"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "--allow-insecure" in result.output
    result = CliRunner().invoke(cli, ["serve", "--auth", "oauth2"])
    assert result.exit_code == 2 and "--principals" in result.output


def test_hash_secret() -> None:
    result = CliRunner().invoke(cli, ["serve", "hash-secret", "--stdin"], input="my-secret\n")
    assert result.exit_code == 0, result.output
    stored = result.output.strip()
    assert "my-secret" not in stored and verify_secret("my-secret", stored)
    result = CliRunner().invoke(cli, ["serve", "hash-secret"], input="abc\nabc\n")
    assert result.exit_code == 0 and verify_secret("abc", result.output.strip().splitlines()[-1])


def test_missing_server_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn -> ImportError
    result = CliRunner().invoke(cli, ["--uri", f"sqlite:///{tmp_path}/c.db", "serve"])
    assert result.exit_code == 1
    assert "pip install 'icepark[server]'" in result.output


def test_missing_fastapi_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import icepark.rest
    import icepark.rest.server

    for name in list(sys.modules):
        if name == "fastapi" or name.startswith(("fastapi.", "icepark.rest.server.app")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fastapi", None)
    with pytest.raises(ImportError, match=r"pip install 'icepark\[server\]'"):
        icepark.rest.create_app  # noqa: B018
    assert icepark.rest.hash_secret("x")  # the principals tools need no FastAPI
