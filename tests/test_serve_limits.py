"""Every row of the request-limits table (aprender.serve._request_limits.LIMITS) driven past its bound
against a real server: the request ends in bounded time with its HTTP status and a JSON error, and the
server answers the next request. Raw sockets where an HTTP client is too polite to lie."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest
from serve_helpers import serving

import aprender
from aprender.linear_model import LinearRegression
from aprender.serve import ServeConfig
from aprender.serve._request_limits import LIMITS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from gen_serve_limits import PAGE, render  # noqa: E402 - the script that writes the table; tools/ is no package

#: Small bounds, so that each row is met in a fraction of a second.
SMALL = {"max_body_size": 64 << 10, "max_body_memory": 96 << 10, "body_timeout": 1.0, "head_timeout": 1.0,
         "max_head_size": 4 << 10, "max_connections": 16, "max_output_bytes": 8 << 10,
         "max_loop_body_size": 32 << 10, "max_client_connections": 8}
#: A guard against a hang, not a timing assertion (the machine is shared).
SLACK = 20.0
GOOD = {"inputs": [{"name": "input-0", "shape": [1, 2], "datatype": "FP64", "data": [1.0, 2.0]}]}
INFER = "/v2/models/line/infer"


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("limits")
    path = root / "line" / "1" / "model.apr"
    path.parent.mkdir(parents=True)
    aprender.save(LinearRegression().fit(np.arange(8.0).reshape(4, 2), np.arange(4.0)), path)
    return root


@pytest.fixture(scope="module")
def server(repository) -> Iterator[str]:
    with serving(ServeConfig((str(repository),), **SMALL)) as url:
        yield url


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


@contextlib.contextmanager
def _socket(url: str) -> Iterator[socket.socket]:
    sock = socket.create_connection(_address(url), timeout=SLACK)
    try:
        yield sock
    finally:
        sock.close()


def _answer(sock: socket.socket) -> tuple[int, dict]:
    """The status and JSON body of the response read from ``sock`` (until the server closes it or the
    body is complete)."""
    data = b""
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), orjson.loads(body[:_length(data)])


def _length(data: bytes) -> int:
    match = re.search(rb"content-length: (\d+)", data.partition(b"\r\n\r\n")[0], re.IGNORECASE)
    return int(match.group(1)) if match else 0


def _head(content_length: int, extra: bytes = b"") -> bytes:
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n"
            % (INFER.encode(), content_length, extra))


def _post(url: str, content: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    response = httpx.post(url + INFER, content=content, headers=headers or {}, timeout=SLACK)
    return response.status_code, response.json()


def _v2(shape: list[int], data: list) -> bytes:
    return orjson.dumps({"inputs": [{"name": "input-0", "shape": shape, "datatype": "FP64", "data": data}]})


# -- one probe per row: (status, error body) of a request past it ------------------------------------


def _body_size(url: str) -> tuple[int, dict]:
    return _post(url, b" " * (SMALL["max_body_size"] + 1))


def _loop_body(url: str) -> tuple[int, dict]:
    rows = [[0.5, 0.5]] * (SMALL["max_loop_body_size"] // 8)  # 10 bytes a row: under max_body_size
    response = httpx.post(url + "/predict", json={"model_id": "line", "features": rows}, timeout=SLACK)
    return response.status_code, response.json()


def _body_memory(url: str) -> tuple[int, dict]:
    # two clients each send most of a body and stop: the second passes the bodies' budget
    piece = b"[" * (SMALL["max_body_memory"] * 6 // 10)
    with _socket(url) as first, _socket(url) as second:
        first.sendall(_head(SMALL["max_body_size"]) + piece)
        time.sleep(0.3)
        second.sendall(_head(SMALL["max_body_size"]) + piece)
        return _answer(second)


def _body_timeout(url: str) -> tuple[int, dict]:
    with _socket(url) as sock:
        sock.sendall(_head(100) + b"{")
        return _answer(sock)


def _head_timeout(url: str) -> tuple[int, dict]:
    with _socket(url) as sock:
        sock.sendall(b"POST " + INFER.encode() + b" HTTP/1.1\r\nHost: x\r\n")
        return _answer(sock)


def _head_size(url: str) -> tuple[int, dict]:
    with _socket(url) as sock:
        sock.sendall(_head(2, b"X-Big: " + b"a" * SMALL["max_head_size"] + b"\r\n") + b"{}")
        return _answer(sock)


def _connections(url: str) -> tuple[int, dict]:
    # connections that send nothing hold their places until head_timeout closes them
    socks = [socket.create_connection(_address(url), timeout=SLACK) for _ in range(SMALL["max_connections"])]
    try:
        time.sleep(0.1)
        return _post(url, orjson.dumps(GOOD))
    finally:
        for sock in socks:
            sock.close()


def _output(url: str) -> tuple[int, dict]:
    rows = SMALL["max_output_bytes"] // 8 + 1  # one float64 per row
    return _post(url, _v2([rows, 2], [0.5] * (2 * rows)))


def _client_connections(url: str) -> tuple[int, dict]:
    # one client's silent connections take its share; another address is still served meanwhile
    socks = [socket.create_connection(_address(url), timeout=SLACK) for _ in range(SMALL["max_client_connections"])]
    try:
        time.sleep(0.1)
        other = socket.create_connection(_address(url), timeout=SLACK, source_address=("127.0.0.2", 0))
        with other:
            other.sendall(_head(len(orjson.dumps(GOOD))) + orjson.dumps(GOOD))
            assert _answer(other)[0] == 200
        return _post(url, orjson.dumps(GOOD))
    finally:
        for sock in socks:
            sock.close()


def _rank(url: str) -> tuple[int, dict]:
    return _post(url, _v2([1] * 70 + [2], [1.0, 2.0]))


def _elements(url: str) -> tuple[int, dict]:
    return _post(url, _v2([0, 2**63 - 1], []))


def _length_digits(url: str) -> tuple[int, dict]:
    body = b'{"inputs":[{"name":"input-0","shape":[1,2],"datatype":"FP64","parameters":{"binary_data_size":16}}]}'
    return _post(url, body + bytes(16), {"Inference-Header-Content-Length": "0" * 100 + str(len(body))})


def _nesting(url: str) -> tuple[int, dict]:
    return _post(url, _v2([1, 2], []).replace(b"[]", b"[" * 5000 + b"]" * 5000))


def _numbers(url: str) -> tuple[int, dict]:
    return _post(url, _v2([1, 2], [0.0, 0.0]).replace(b"0.0,", b"9" * 30_000 + b","))


PROBES: dict[str, tuple[Callable[[str], tuple[int, dict]], str]] = {
    "max_body_size": (_body_size, "max_body_size"),
    "max_loop_body_size": (_loop_body, "/v2/models/NAME/infer"),
    "max_body_memory": (_body_memory, "max_body_memory"),
    "body_timeout": (_body_timeout, "body_timeout"),
    "head_timeout": (_head_timeout, "head_timeout"),
    "max_head_size": (_head_size, "max_head_size"),
    "max_connections": (_connections, "(max_connections)"),
    "max_client_connections": (_client_connections, "(max_client_connections)"),
    "max_output_bytes": (_output, "(max_output_bytes)"),
    "tensor rank": (_rank, "71 dimensions; at most 8"),
    "tensor elements": (_elements, "holds more elements than"),
    "decimal digits": (_length_digits, "1 to 19 ASCII digits"),
    "JSON nesting": (_nesting, "depth limit exceeded"),
    "JSON numbers": (_numbers, "not valid JSON"),
}


def test_every_limit_has_a_probe_and_a_documented_row():
    assert sorted(PROBES) == sorted(limit.name for limit in LIMITS)
    docs = PAGE.read_text()
    assert render(docs) == docs, "docs/serve.md is out of date: run python tools/gen_serve_limits.py"
    for limit in LIMITS:
        assert f"| `{limit.name}` |" in docs


def test_the_config_defaults_are_the_table():
    fields = {f.name: f.default for f in dataclasses.fields(ServeConfig)}
    for limit in LIMITS:
        assert (fields[limit.name] == limit.value) if limit.field else limit.name not in fields


@pytest.mark.parametrize("limit", LIMITS, ids=lambda limit: limit.name)
def test_a_request_past_a_limit_gets_its_status_and_the_server_goes_on(server, limit):
    probe, message = PROBES[limit.name]
    start = time.monotonic()
    status, body = probe(server)
    assert time.monotonic() - start < SLACK
    assert status == limit.status, body
    assert message in body["error"], body
    time.sleep(0.1 if "connections" not in limit.name else SMALL["head_timeout"] + 0.5)
    assert httpx.post(server + INFER, json=GOOD, timeout=SLACK).status_code == 200


def test_no_module_of_the_server_reads_a_number_from_text_but_decimal():
    """The rule behind the 'decimal digits' row: str.isdigit() and its kin appear in _numbers.py only."""
    for path in sorted((ROOT / "aprender" / "serve").glob("*.py")):
        if path.name == "_numbers.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("isdigit", "isdecimal", "isnumeric"):
                pytest.fail(f"{path.name}:{node.lineno} reads a number with str.{node.attr}(); use _numbers.decimal")


@pytest.mark.parametrize("version", ["²", "\u0661", "0" * 3000, "-1", "1e3"],
                         ids=["superscript", "arabic-indic", "3000-digits", "negative", "exponent"])
def test_a_version_that_is_not_a_decimal_is_not_found(server, version):
    for path in (f"/v2/models/line/versions/{version}/infer", f"/v2/models/line/versions/{version}"):
        response = httpx.request("POST" if path.endswith("infer") else "GET", server + path, json=GOOD, timeout=SLACK)
        assert response.status_code == 404, response.text
    response = httpx.post(server + "/predict", json={"model_id": f"line:{version}", "features": [1.0, 2.0]},
                          timeout=SLACK)
    assert response.status_code == 404, response.text


def test_a_version_folder_named_with_other_digits_is_not_a_version(repository, tmp_path):
    """A folder '²' beside '1' (str.isdigit() says yes, int() refuses it) no longer stops the scan."""
    import shutil

    from aprender.serve import Policy, scan

    root = tmp_path / "repo"
    shutil.copytree(repository, root)
    for name in ("²", "\u0661\u0662", "9" * 200):
        shutil.copytree(root / "line" / "1", root / "line" / name)
    assert list(scan([str(root)], Policy())["line"]) == [1]


def test_names_a_client_chooses_never_become_metric_labels(server):
    """A metric series per model name or path a client sends would grow the server's memory without
    bound: labels are route templates, served models and status codes only."""
    for i in range(20):
        httpx.post(f"{server}/v2/models/nope{i}/infer", json=GOOD, timeout=SLACK)
        httpx.post(f"{server}/v2/models/line/versions/{i + 7}/infer", json=GOOD, timeout=SLACK)
        httpx.post(f"{server}/predict", json={"model_id": f"nope{i}", "features": [1.0, 2.0]}, timeout=SLACK)
        httpx.get(f"{server}/no/such/path{i}", timeout=SLACK)
    text = httpx.get(f"{server}/metrics", timeout=SLACK).text
    labels = set(re.findall(r'(?:model_name|model_version|path)="([^"]*)"', text))
    versions = {str(i + 7) for i in range(20)}
    chosen = {label for label in labels if "nope" in label or "such" in label or label in versions}
    assert not chosen, labels
    assert "line" in labels and "/v2/models/{model}/infer" in labels
