"""What the prompt hook speaks: JSON, and one HTTP POST, on the interpreter's C modules.

The prompt hook runs before every prompt a user sends to Claude Code, so its start-up is
added to every prompt (``bench/results/claude-code-hooks.json``). Most of that start-up was
imports, not work: ``json`` imports ``re`` (and with it ``enum``, ``functools`` and
``collections``) for one whitespace pattern, and ``socket`` imports ``enum`` and ``selectors``
to wrap its constants. What the hook needs of them is written in C and importable alone:
``_json``'s scanner and encoder (the ones ``json`` itself uses) and ``_socket``.

So :func:`dumps` and :func:`loads` are ``json.dumps`` and ``json.loads`` with their defaults,
built on ``_json`` directly. They fall back to the public ``json`` where ``_json`` is missing
(PyPy) and on every input the fast path does not take as is (an error, bytes that are not
UTF-8): an error then reads exactly as the standard library writes it, and the tests compare
both on awkward inputs so they cannot drift apart. :func:`post` is one ``Connection: close``
HTTP/1.1 exchange over ``_socket`` (``http.client`` would bring the ``email`` package).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # ``typing`` costs start-up time too; type checkers read this as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["dumps", "loads", "post", "split_url"]

_WHITESPACE = " \t\n\r"  # what ``json.decoder.WHITESPACE`` matches


class _Defaults:
    """What ``_json.make_scanner`` reads off a ``json.JSONDecoder()``: the defaults of ``loads``."""

    __slots__ = ()
    strict = True
    object_hook = None
    object_pairs_hook = None
    array_hook = None  # read from Python 3.15 on
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan: Callable[[str, int], tuple[Any, int]] | None
try:
    import _json

    _scan = _json.make_scanner(_Defaults())  # type: ignore[arg-type]  # it reads the attributes only
    _make_encoder = _json.make_encoder
    _encode_string = _json.encode_basestring_ascii
except (ImportError, AttributeError, TypeError):  # no C accelerator (PyPy): the public module
    _scan = None


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: object) -> str:
    """``json.dumps(value)``, without importing ``json``."""
    if _scan is None:
        import json

        return json.dumps(value)
    # json.JSONEncoder().iterencode(value, _one_shot=True), with the defaults spelled out
    encode = _make_encoder({}, _not_serializable, _encode_string, None, ": ", ", ", False, False, True)
    return "".join(encode(value, 0))


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, without importing ``json`` unless ``text`` is not valid JSON.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON (raised by ``json`` itself).
    """
    if _scan is None or (isinstance(text, bytes) and not _plain_utf8(text)):
        return _stdlib_loads(text)
    string = text.decode("utf-8", "surrogatepass") if isinstance(text, bytes) else text
    start = len(string) - len(string.lstrip(_WHITESPACE))
    try:
        value, end = _scan(string, start)
    except Exception:  # without ``json.decoder`` loaded, _json cannot raise its error: ask json
        return _stdlib_loads(text)
    if end != len(string) and string[end:].strip(_WHITESPACE):
        return _stdlib_loads(text)  # extra data after the value: json says where
    return value


def _plain_utf8(data: bytes) -> bool:
    """Whether ``json.detect_encoding`` would call ``data`` UTF-8 with no BOM (else: ask json)."""
    return not data or (data[0] not in (0x00, 0xEF, 0xFE, 0xFF) and (len(data) < 2 or data[1] != 0))


def _stdlib_loads(text: str | bytes) -> Any:
    import json

    return json.loads(text)


def split_url(url: str) -> tuple[str, str, int, str]:
    """``scheme://host[:port][/path]`` as (scheme, host, port, path).

    Written out rather than ``urllib.parse.urlsplit``: that module (and ``ipaddress`` with it)
    costs the prompt hook about as much start-up time as the server takes to search. It takes
    what ``REFLEXIO_URL`` holds: http or https, a name, an IPv4 or a bracketed IPv6 address.

    Raises:
        ValueError: The URL is not http(s), has no host, or its port is not a number.
    """
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in {"http", "https"}:
        raise ValueError(f"REFLEXIO_URL must be an http:// or https:// URL, got {url!r}")
    netloc, slash, path = rest.partition("/")
    netloc = netloc.rpartition("@")[2]  # user:password@ is never sent by the hooks
    if netloc.startswith("["):
        host, bracket, tail = netloc[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise ValueError(f"REFLEXIO_URL has an unclosed IPv6 address: {url!r}")
        port = tail[1:]
    else:
        host, _, port = netloc.partition(":")
    if not host:
        raise ValueError(f"REFLEXIO_URL has no host: {url!r}")
    if port and not port.isdigit():
        raise ValueError(f"REFLEXIO_URL has a port that is not a number: {url!r}")
    return scheme, host, int(port) if port else (443 if scheme == "https" else 80), slash + path


def post(url: str, path: str, body: object, *, api_key: str, timeout: float) -> Any:
    """POST ``body`` as JSON to ``url`` + ``path``; the JSON answer, within ``timeout`` overall.

    Raises:
        OSError: The server cannot be reached, or did not answer in time.
        RuntimeError: The server answered with a status other than 200.
    """
    scheme, host, port, base = split_url(url)
    headers = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "close"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    target = base.rstrip("/") + path
    send = _post_tls if scheme == "https" else _post_plain
    status, data = send(host, port, target, dumps(body).encode(), headers, timeout)
    if status != 200:
        raise RuntimeError(f"POST {path} answered {status}: {data[:300]!r}")
    return loads(data)


def _connect(host: str, port: int, timeout: float) -> Any:
    """``socket.create_connection`` on ``_socket``: the first address that accepts."""
    import _socket

    error: OSError = OSError(f"no address for {host!r}")
    # A str host goes through the "idna" codec, which imports ``re``; an ASCII one needs none of it.
    name = host.encode("ascii") if host.isascii() else host
    for family, kind, proto, _, address in _socket.getaddrinfo(name, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as exc:
            sock.close()
            error = exc
        else:
            return sock
    raise error


def _post_plain(
    host: str, port: int, target: str, payload: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    deadline = time.monotonic() + timeout
    lines = [f"POST {target} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(payload)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
    sock = _connect(host, port, timeout)
    try:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            sock.settimeout(max(0.01, deadline - time.monotonic()))
    finally:
        sock.close()
    head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(":", 1) for line in header_lines if ":" in line)
    if any(k.strip().lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in fields.items()):
        rest = _unchunk(rest)
    return int(status_line.split()[1]), rest


def _unchunk(data: bytes) -> bytes:
    out = []
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(data[:size])
        data = data[size + 2 :]
    return b"".join(out)


def _post_tls(
    host: str, port: int, target: str, payload: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes]:
    import http.client  # with ssl, which costs that much anyway

    connection = http.client.HTTPSConnection(host, port, timeout=timeout)
    try:
        connection.request("POST", target, payload, headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
