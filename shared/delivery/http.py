"""The safe HTTP client: calls an HTTP target with an occurrence's envelope.

Safe means four things, because the URL comes from whoever registered the task:

- **Addresses.** The client resolves the host itself, refuses it when *any* address it resolves to
  is off limits (:mod:`shared.domain.addresses`), and then connects to the checked address
  (no second DNS lookup, so a rebinding DNS server cannot swap the address in between), sending
  the URL's host in ``Host`` and, for https, in SNI and certificate verification.
- **Time.** ``timeout_seconds`` bounds the whole call: per-operation socket timeouts, plus a
  watchdog that shuts the socket down when the budget is spent (a receiver that sends one byte a
  second never times out a socket read).
- **Size.** At most ``max_response_bytes`` of an answer are read; the rest is never received.
- **Redirects.** Never followed: a 3xx answer fails the attempt for good, its status and
  ``Location`` in the error (the signed call and its secret headers go to the URL its writer
  gave, nowhere else: Standard Webhooks senders do the same).

One :class:`HttpDelivery` keeps its connection pools across calls (Lambda reuses the process)
and may be called from many threads at once.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from time import monotonic, time  # wall: a call's duration and timeout, a signature's timestamp
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from urllib3 import PoolManager, Timeout
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, LocationValueError, NewConnectionError, ReadTimeoutError
from urllib3.response import BaseHTTPResponse
from urllib3.util import make_headers
from urllib3.util.ssl_match_hostname import CertificateError

from shared.delivery.envelope import IDEMPOTENCY_KEY, Message
from shared.delivery.outcome import Outcome
from shared.domain.addresses import IPAddress, host_as_called, parse_address, refusal
from shared.domain.retry import retry_after_seconds
from shared.domain.tasks import HttpTarget
from shared.observability import logger

HostResolver = Callable[..., Sequence[tuple[Any, ...]]]
"""What turns a target's host name into its addresses: ``socket.getaddrinfo`` or a stand-in,
called as ``resolver(host, port, type=SOCK_STREAM)``."""

USER_AGENT = "Sundial"
MAX_LOCATION_SHOWN = 512
"""How much of a 3xx answer's Location the run's error quotes."""
DEFAULT_PORTS = {"http": 80, "https": 443}
BODILESS_METHODS = frozenset({"GET", "HEAD"})
DROPPED_HEADERS = frozenset(
    {
        "host",  # always the URL's host: the address was checked for that name
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
"""Task headers that would change how the request is framed or routed are never sent."""
_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"


# --- the watchdog -------------------------------------------------------------------------------

_current = threading.local()


def _abort(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for TLS sockets: it wakes a blocked read at once.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watch:
    """One call's time budget: when it is spent, the socket in use is shut down."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._done = False
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watch:
        _current.watch = self
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        with self._lock:
            self._done = True
            self._sock = None
        self._timer.cancel()
        _current.watch = None

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                _abort(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            if self._sock is not None:
                _abort(self._sock)


def _attach(sock: socket.socket | None) -> None:
    watch: _Watch | None = getattr(_current, "watch", None)
    if watch is not None and sock is not None:
        watch.attach(sock)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _attach(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach(self.sock)  # a pooled connection being reused
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _attach(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach(self.sock)
        super().request(*args, **kwargs)


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


# --- URLs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Url:
    text: str
    scheme: str
    host: str
    """Lower-case ASCII host name (IDNA), or an IP address without brackets."""
    port: int
    target: str
    """Path and query, percent-encoded where needed."""
    auth: str | None

    @property
    def name(self) -> str:
        return self.host.rstrip(".")

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def _parse(url: str) -> _Url:
    """Raises ``ValueError`` with the reason when ``url`` is not an http(s) URL Sundial can call."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError("only http and https URLs can be called")
    host = parts.hostname
    if not host:
        raise ValueError("the URL has no host")
    host = host_as_called(host)  # what registration judged (shared/domain/addresses.py)
    port = parts.port or DEFAULT_PORTS[scheme]
    target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_URL_SAFE)
    auth = None
    if parts.username is not None:
        auth = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return _Url(url, scheme, host, port, target, auth)


def _wire(value: str) -> str:
    """A header value http.client can send: text beyond Latin-1 goes out as UTF-8 bytes."""
    if "\r" in value or "\n" in value:
        raise ValueError("a header value has a line break")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8").decode("latin-1")
    return value


# --- errors -------------------------------------------------------------------------------------


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps (``__cause__``, ``__context__``, and urllib3's wrapped errors)."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen or len(seen) > 20:
            continue
        seen.add(id(current))
        yield current
        stack.extend(arg for arg in current.args if isinstance(arg, BaseException))
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _timed_out(timeout: float) -> Outcome:
    return Outcome.retry(f"timed out after {timeout:g} s")


_NETWORK_ERRORS: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((ConnectionRefusedError,), "connection refused"),
    ((ConnectionResetError, ConnectionAbortedError, BrokenPipeError), "connection reset"),
    ((http.client.RemoteDisconnected,), "connection closed before an answer"),
    ((socket.gaierror,), "DNS lookup failed"),
)
_UNREACHABLE = {errno.ENETUNREACH: "network unreachable", errno.EHOSTUNREACH: "host unreachable"}


def _is_timeout(error: BaseException) -> bool:
    # urllib3's NewConnectionError is a ConnectTimeoutError by inheritance only.
    if isinstance(error, NewConnectionError):
        return False
    return isinstance(error, TimeoutError | ReadTimeoutError | ConnectTimeoutError)


def _certificate_problem(chain: list[BaseException]) -> str | None:
    for error in chain:
        if isinstance(error, ssl.SSLCertVerificationError):
            return str(error.verify_message or error.reason or error)
        if isinstance(error, CertificateError):  # urllib3's own hostname check
            return str(error)
    return None


def _failure(exc: BaseException, expired: bool, timeout: float) -> Outcome:
    """Classify a failed exchange: network trouble is retried, a bad certificate or request is not."""
    if expired:
        return _timed_out(timeout)
    chain = list(_causes(exc))
    certificate = _certificate_problem(chain)
    if certificate is not None:
        return Outcome.fail(f"TLS certificate verification failed: {certificate}")
    for kinds, text in _NETWORK_ERRORS:
        if any(isinstance(error, kinds) for error in chain):
            return Outcome.retry(text)
    for error in chain:
        if isinstance(error, OSError) and error.errno in _UNREACHABLE:
            return Outcome.retry(_UNREACHABLE[error.errno])
    if any(_is_timeout(error) for error in chain):
        return _timed_out(timeout)
    for error in chain:
        if isinstance(error, ssl.SSLError):
            return Outcome.retry(f"TLS handshake failed: {error.reason or error}")
    if any(isinstance(error, LocationValueError | ValueError) for error in chain):
        return Outcome.fail(f"invalid request: {exc}")
    if isinstance(exc, NewConnectionError):
        return Outcome.retry("connection failed")
    return Outcome.retry(f"request failed: {type(exc).__name__}")


def _connect_failed(exc: BaseException) -> bool:
    """Nothing was sent: another address of the host may still answer."""
    return isinstance(exc, NewConnectionError)


# --- the client ---------------------------------------------------------------------------------


class HttpDelivery:
    def __init__(
        self,
        allow_loopback: bool = False,
        allow_private: bool = False,
        max_response_bytes: int = 4096,
        resolver: HostResolver = socket.getaddrinfo,
        *,
        ca_certs: str | None = None,
        max_pools: int = 64,
        pool_size: int = 32,
        user_agent: str = USER_AGENT,
    ) -> None:
        """``allow_loopback`` is for the local runtime only; ``ca_certs`` replaces the system's
        trust store (tests); ``pool_size`` keeps that many idle connections per address."""
        if max_response_bytes < 0:
            raise ValueError("max_response_bytes cannot be negative")
        self._allow_loopback = allow_loopback
        self._allow_private = allow_private
        self._max_response_bytes = max_response_bytes
        self._resolver = resolver
        self._user_agent = user_agent
        self._pools = PoolManager(num_pools=max_pools, maxsize=pool_size, block=False, ca_certs=ca_certs)
        self._pools.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}

    def close(self) -> None:
        """Close every pooled connection."""
        self._pools.clear()

    def call(self, target: HttpTarget, envelope: Message) -> Outcome:
        """Send ``envelope`` to ``target``; never raises."""
        started = monotonic()  # wall: how long the call took
        timeout = float(target.timeout_seconds)
        try:
            with _Watch(timeout) as watch:
                outcome = self._call(target, envelope, watch, started + timeout, timeout)
        except Exception as exc:  # a bug here must not take the trigger's other targets down
            logger.exception("unexpected error calling an HTTP target")
            outcome = Outcome.retry(f"unexpected error: {type(exc).__name__}")
        return outcome.timed(int((monotonic() - started) * 1000))  # wall: how long the call took

    def _call(self, target: HttpTarget, envelope: Message, watch: _Watch, deadline: float, timeout: float) -> Outcome:
        method = target.method.upper()
        body = None if method in BODILESS_METHODS else envelope.body()
        try:
            url = _parse(target.url)
        except ValueError as exc:
            return Outcome.fail(f"invalid URL: {exc}")
        addresses = self._resolve(url)
        if isinstance(addresses, Outcome):
            return addresses
        try:
            headers = self._headers(target, envelope, url, body)
        except ValueError as exc:
            return Outcome.fail(f"invalid request: {exc}")
        answer = self._exchange(url, addresses, method, headers, body, watch, deadline, timeout)
        if isinstance(answer, Outcome):
            return answer
        status, location, data, retry_after = answer
        if 300 <= status <= 399 and location:
            # Never followed (as Standard Webhooks senders do): the signed call and its secret
            # headers go to the URL its writer gave, nowhere else. A 3xx is a final failure.
            where = location[:MAX_LOCATION_SHOWN]
            return Outcome.fail(f"HTTP {status} redirect to {where} not followed", status=status, body=data)
        wait = retry_after_seconds(retry_after, datetime.now(UTC))  # wall: an HTTP date is the receiver's clock's
        return Outcome.of_status(status, body=data, retry_after_s=wait)

    def _resolve(self, url: _Url) -> list[IPAddress] | Outcome:
        """The host's addresses, all of them allowed; or why not."""
        literal = parse_address(url.host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                infos = self._resolver(url.host, url.port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                return Outcome.retry(f"DNS lookup failed for {url.host}: {why}")
            addresses = []
            for info in infos:
                address = parse_address(str(info[4][0]))
                if address is not None and address not in addresses:
                    addresses.append(address)
            if not addresses:
                return Outcome.retry(f"DNS lookup for {url.host} found no address")
        for address in addresses:
            reason = refusal(address, allow_loopback=self._allow_loopback, allow_private=self._allow_private)
            if reason is not None:
                if literal is not None:
                    return Outcome.fail(f"refused: {address} is {reason}")
                return Outcome.fail(f"refused: {url.host} resolves to {address}, {reason}")
        return addresses

    def _headers(self, target: HttpTarget, envelope: Message, url: _Url, body: bytes | None) -> dict[str, str]:
        """The task's headers, then the envelope's (they win, whatever their case), its signature
        (of ``body``, the exact bytes sent: none for a bodiless request) and ``Host``."""
        merged: dict[str, tuple[str, str]] = {"user-agent": ("User-Agent", self._user_agent)}
        if url.auth is not None:
            merged["authorization"] = ("Authorization", make_headers(basic_auth=url.auth)["authorization"])
        for name, value in target.headers.items():
            if name.lower() not in DROPPED_HEADERS:
                merged[name.lower()] = (name, value)
        envelope_headers = envelope.headers()
        for name, value in envelope_headers.items():
            merged[name.lower()] = (name, value)
        signer = envelope.signer
        if signer is not None:
            # wall: a signature's timestamp is real time, which receivers check against their own clock
            signed = signer.headers(envelope_headers[IDEMPOTENCY_KEY], int(time()), body or b"")
            for name, value in signed.items():
                merged[name.lower()] = (name, value)
        if body is None:
            merged.pop("content-type", None)
        merged["host"] = ("Host", url.host_header)
        return {name: _wire(value) for name, value in merged.values()}

    def _pool(self, url: _Url, address: IPAddress) -> HTTPConnectionPool:
        """The pool for ``address``, pinned: urllib3 connects to the IP and never resolves again."""
        tls = {"server_hostname": url.host, "assert_hostname": url.host} if url.scheme == "https" else None
        return self._pools.connection_from_host(str(address), port=url.port, scheme=url.scheme, pool_kwargs=tls)

    def _exchange(
        self,
        url: _Url,
        addresses: list[IPAddress],
        method: str,
        headers: dict[str, str],
        body: bytes | None,
        watch: _Watch,
        deadline: float,
        timeout: float,
    ) -> tuple[int, str | None, bytes, str | None] | Outcome:
        """One request: its status, ``Location``, first body bytes and ``Retry-After``; or how it
        failed."""
        failed: BaseException | None = None
        for address in addresses:
            left = deadline - monotonic()  # wall: a real call's timeout
            if left <= 0 or watch.expired:
                return _timed_out(timeout)
            try:
                response = self._pool(url, address).urlopen(
                    method,
                    url.target,
                    body=body,
                    headers=headers,
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    preload_content=False,
                    release_conn=False,
                    timeout=Timeout(connect=min(timeout, left), read=timeout),
                )
            except Exception as exc:
                if _connect_failed(exc) and not watch.expired:
                    failed = exc
                    continue
                return _failure(exc, watch.expired, timeout)
            try:
                data = self._read(response, watch)
            except Exception:  # the status is the receiver's answer; a broken body does not change it
                data = b""
            return response.status, response.headers.get("Location"), data, response.headers.get("Retry-After")
        assert failed is not None
        return _failure(failed, watch.expired, timeout)

    def _read(self, response: BaseHTTPResponse, watch: _Watch) -> bytes:
        """At most ``max_response_bytes`` of the body; a longer body's connection is closed unread."""
        limit = self._max_response_bytes
        complete = False
        try:
            data = response.read(amt=limit, decode_content=False) if limit else b""
            complete = len(data) < limit or response.length_remaining == 0
            return data
        finally:
            if not complete or watch.expired:
                response.close()
            response.release_conn()
