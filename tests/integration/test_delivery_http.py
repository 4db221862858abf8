"""The HTTP client against real servers on this machine: plain HTTP on 127.0.0.1 and ::1, and
HTTPS with a certificate made for the test (checks SNI and hostname verification while the
connection goes to the pinned IP)."""

from __future__ import annotations

import datetime as dt
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from shared.delivery import Deliverer, Envelope, HttpDelivery
from shared.domain.tasks import HttpTarget

pytestmark = pytest.mark.integration

UTC = dt.UTC
ENVELOPE = Envelope(
    task_id="tsk_01JD8Z",
    run_id="run_01JD90",
    scheduled_for=dt.datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=UTC),
    fired_at=dt.datetime(2026, 11, 22, 18, 0, 0, 300_999, tzinfo=dt.timezone(dt.timedelta(hours=8))),
    attempt=2,
    payload={"order_id": 123, "note": "café"},
)
EXPECTED_BODY = (
    '{"task_id":"tsk_01JD8Z","run_id":"run_01JD90","scheduled_for":"2026-11-22T10:00:00.250Z",'
    '"fired_at":"2026-11-22T10:00:00.300Z","attempt":2,"payload":{"order_id":123,"note":"café"}}'
).encode()
HUGE = 1 << 30  # what the streaming route would send if nobody stopped reading


# --- the receiving end -------------------------------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes
    client_port: int


@dataclass
class Receiver:
    """What the test servers saw, shared by all of them."""

    requests: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    streamed: dict[str, int] = field(default_factory=dict)
    stream_done: threading.Event = field(default_factory=threading.Event)
    server_names: list[str | None] = field(default_factory=list)

    def paths(self) -> list[str]:
        with self.lock:
            return [seen.path for seen in self.requests]

    def last(self, path: str) -> Seen:
        with self.lock:
            return next(seen for seen in reversed(self.requests) if urlsplit(seen.path).path == path)

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()
            self.server_names.clear()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so pooled connections are really reused
    disable_nagle_algorithm = True
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()

    def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        if status in (204, 304) or status < 200:
            # These answers have no body (RFC 9110): one sent anyway stays unread on the kept-alive
            # connection and garbles the next answer read from it (a test that failed at random).
            body = b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        receiver = self.server.receiver
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with receiver.lock:
            receiver.requests.append(
                Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    self.client_address[1],
                )
            )
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        route = parts.path
        if route == "/ok":
            self._answer(200, b'{"received":true}', {"Content-Type": "application/json"})
        elif route.startswith("/status/"):
            self._answer(int(route.rsplit("/", 1)[1]), b"status body")
        elif route == "/redirect":
            headers = {"Location": query["location"]} if "location" in query else {}
            self._answer(int(query.get("code", "302")), b"moved", headers)
        elif route == "/slow":
            receiver.stop.wait(3)
            self._answer(200, b"late")
        elif route == "/drip":
            self._drip()
        elif route == "/huge":
            self._stream(route, with_length=query.get("length") == "1")
        else:
            self._answer(404)

    def _drip(self) -> None:
        """Headers one byte at a time: every read is quick, the answer never finishes in time."""
        head = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"." * 40 + b"\r\nContent-Length: 0\r\n\r\n"
        try:
            for byte in head:
                if self.server.receiver.stop.wait(0.1):
                    return
                self.wfile.write(bytes([byte]))
        except OSError:
            pass
        self.close_connection = True

    def _stream(self, route: str, *, with_length: bool) -> None:
        receiver = self.server.receiver
        self.send_response(200)
        if with_length:
            self.send_header("Content-Length", str(HUGE))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < HUGE and not receiver.stop.is_set():
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        finally:
            receiver.streamed[route] = sent
            receiver.stream_done.set()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, receiver: Receiver, tls: ssl.SSLContext | None = None) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.receiver = receiver
        self.tls = tls
        super().__init__((host, 0), Handler)
        self.port = self.server_address[1]
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up on purpose (timeouts, refused certificates) are not errors here

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.stop.set()


@pytest.fixture(scope="module")
def server(receiver: Receiver) -> Iterator[Server]:
    running = Server("127.0.0.1", receiver)
    yield running
    receiver.stop.set()
    running.close()


@pytest.fixture
def seen(receiver: Receiver) -> Receiver:
    receiver.clear()
    return receiver


@pytest.fixture(scope="module")
def delivery() -> HttpDelivery:
    """One client for the module, as the trigger keeps one per process."""
    return HttpDelivery(allow_loopback=True)


def url(server: Server, path: str, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.port}{path}"


def resolver_to(table: dict[str, list[str]], calls: list[str] | None = None) -> Callable[..., list[tuple[Any, ...]]]:
    """A stand-in for socket.getaddrinfo that answers from ``table``."""

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0))
            if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in table[host]
        ]

    return resolve


# --- what a target receives --------------------------------------------------------------------


def test_a_post_carries_the_envelope_body_and_headers_of_the_api(
    server: Server, seen: Receiver, delivery: HttpDelivery
) -> None:
    target = HttpTarget(
        url(server, "/ok?tenant=a"),
        headers={"X-Team": "orders", "idempotency-key": "mine", "content-type": "text/plain", "Connection": "close"},
    )

    outcome = delivery.call(target, ENVELOPE)

    assert outcome.ok
    assert outcome.status == 200
    assert outcome.error is None
    assert not outcome.retryable
    assert outcome.body == b'{"received":true}'
    request = seen.last("/ok")
    assert request.method == "POST"
    assert request.path == "/ok?tenant=a"
    assert request.body == EXPECTED_BODY
    assert json.loads(request.body)["payload"] == {"order_id": 123, "note": "café"}
    headers = request.headers
    assert headers["content-type"] == "application/json"
    assert headers["idempotency-key"] == "run_01JD90"  # the envelope's headers win, whatever the case
    assert headers["sundial-task-id"] == "tsk_01JD8Z"
    assert headers["sundial-attempt"] == "2"
    assert headers["x-team"] == "orders"
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert headers["content-length"] == str(len(EXPECTED_BODY))
    assert headers.get("connection") != "close"  # framing headers of the task are not sent


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
def test_other_methods_send_the_body_too(server: Server, seen: Receiver, delivery: HttpDelivery, method: str) -> None:
    assert delivery.call(HttpTarget(url(server, "/ok"), method=method), ENVELOPE).ok
    request = seen.last("/ok")
    assert request.method == method
    assert request.body == EXPECTED_BODY


def test_a_get_sends_the_headers_but_no_body(server: Server, seen: Receiver, delivery: HttpDelivery) -> None:
    assert delivery.call(HttpTarget(url(server, "/ok"), method="GET"), ENVELOPE).ok
    request = seen.last("/ok")
    assert request.method == "GET"
    assert request.body == b""
    assert "content-length" not in request.headers
    assert request.headers["idempotency-key"] == "run_01JD90"
    assert request.headers["sundial-attempt"] == "2"


# --- answers and their classification -----------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "ok", "retryable"),
    [
        (200, True, False),
        (201, True, False),
        (204, True, False),
        (400, False, False),
        (401, False, False),
        (404, False, False),
        (409, False, False),
        (408, False, True),
        (429, False, True),
        (500, False, True),
        (502, False, True),
        (503, False, True),
        (304, False, False),
    ],
)
def test_the_status_decides_success_retry_or_failure(
    server: Server, delivery: HttpDelivery, status: int, ok: bool, retryable: bool
) -> None:
    outcome = delivery.call(HttpTarget(url(server, f"/status/{status}")), ENVELOPE)

    assert (outcome.ok, outcome.retryable, outcome.status) == (ok, retryable, status)
    assert outcome.error == (None if ok else f"HTTP {status}")


def test_a_redirect_without_a_location_is_a_final_failure(server: Server, delivery: HttpDelivery) -> None:
    outcome = delivery.call(HttpTarget(url(server, "/redirect?code=302")), ENVELOPE)
    assert outcome.final
    assert outcome.error == "HTTP 302"


def test_a_closed_port_is_a_retryable_refused_connection(delivery: HttpDelivery) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed as the block ends: nobody listens there

    outcome = delivery.call(HttpTarget(f"http://127.0.0.1:{port}/"), ENVELOPE)

    assert outcome.retryable
    assert outcome.error == "connection refused"
    assert outcome.status is None


# --- time and size ------------------------------------------------------------------------------


# How punctually a call is cut at its timeout is `make bench ARGS=--http-timeouts`'s figure: these
# tests check that it is cut (the receivers below would answer, seconds later, if it were not).


def test_a_slow_answer_times_out_within_the_target_timeout(server: Server, delivery: HttpDelivery) -> None:
    outcome = delivery.call(HttpTarget(url(server, "/slow"), timeout_seconds=1), ENVELOPE)

    assert outcome.retryable
    assert outcome.error == "timed out after 1 s"  # not the 200 /slow sends after 3 s
    assert outcome.duration_ms is not None


def test_an_answer_that_trickles_in_is_cut_at_the_timeout(server: Server, delivery: HttpDelivery) -> None:
    """Every read gets a byte well within the timeout; the call as a whole must not (the whole
    answer would have come in after about 9 s: a 200)."""
    outcome = delivery.call(HttpTarget(url(server, "/drip"), timeout_seconds=1), ENVELOPE)

    assert outcome.retryable
    assert outcome.error == "timed out after 1 s"


@pytest.mark.parametrize("length", ["0", "1"], ids=["until-close", "content-length"])
def test_a_huge_answer_is_read_up_to_the_limit_only(server: Server, seen: Receiver, length: str) -> None:
    seen.stream_done.clear()
    delivery = HttpDelivery(allow_loopback=True, max_response_bytes=4096)
    outcome = delivery.call(HttpTarget(url(server, f"/huge?length={length}"), timeout_seconds=5), ENVELOPE)

    assert outcome.ok
    assert outcome.status == 200
    assert outcome.body == b"x" * 4096
    assert seen.stream_done.wait(3), "the receiver should notice we hung up"
    assert seen.streamed["/huge"] < 64 << 20  # socket buffers' worth, not a gigabyte


def test_pooled_connections_are_reused(server: Server, seen: Receiver) -> None:
    delivery = HttpDelivery(allow_loopback=True)
    assert delivery.call(HttpTarget(url(server, "/ok")), ENVELOPE).ok
    assert delivery.call(HttpTarget(url(server, "/status/500")), ENVELOPE).retryable
    assert delivery.call(HttpTarget(url(server, "/ok")), ENVELOPE).ok

    assert len({request.client_port for request in seen.requests}) == 1


def test_many_threads_share_one_client(server: Server, seen: Receiver, delivery: HttpDelivery) -> None:
    def fire(index: int) -> bool:
        envelope = Envelope(f"tsk_{index}", f"run_{index}", ENVELOPE.scheduled_for, ENVELOPE.fired_at, 1, index)
        return delivery.call(HttpTarget(url(server, "/ok")), envelope).ok

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(fire, range(48)))

    assert all(results)
    assert sorted(json.loads(r.body)["payload"] for r in seen.requests) == list(range(48))
    assert all(r.headers["idempotency-key"] == f"run_{json.loads(r.body)['payload']}" for r in seen.requests)


# --- redirects: never followed -----------------------------------------------------------------


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_fails_for_good_saying_where(
    server: Server, seen: Receiver, delivery: HttpDelivery, code: int
) -> None:
    """The signed call and its headers went to the URL its writer gave; a 3xx would carry them to
    one they did not (another port of the same host, another host): never followed, like a
    Standard Webhooks sender, the attempt fails with the status and the Location."""
    elsewhere = url(server, "/ok")  # the same host and port: followed before, to any path
    outcome = delivery.call(HttpTarget(url(server, f"/redirect?code={code}&location={elsewhere}")), ENVELOPE)

    assert outcome.final
    assert outcome.status == code
    assert outcome.error == f"HTTP {code} redirect to {elsewhere} not followed"
    assert [urlsplit(p).path for p in seen.paths()] == ["/redirect"]


# --- addresses: checked once, then pinned -------------------------------------------------------


def test_a_name_resolving_to_loopback_is_refused_unless_allowed(server: Server, seen: Receiver) -> None:
    resolver = resolver_to({"hook.test": ["127.0.0.1"]})
    target = HttpTarget(url(server, "/ok", host="hook.test"))

    refused = HttpDelivery(resolver=resolver).call(target, ENVELOPE)
    allowed = HttpDelivery(allow_loopback=True, resolver=resolver).call(target, ENVELOPE)

    assert refused.final
    assert refused.error == "refused: hook.test resolves to 127.0.0.1, a loopback address"
    assert allowed.ok
    assert seen.paths() == ["/ok"]
    assert seen.last("/ok").headers["host"] == f"hook.test:{server.port}"  # connected to the IP, named the host


def test_one_private_address_among_public_ones_refuses_the_host(server: Server, seen: Receiver) -> None:
    delivery = HttpDelivery(
        allow_loopback=True, resolver=resolver_to({"rebind.test": ["127.0.0.1", "93.184.216.34", "10.1.2.3"]})
    )
    outcome = delivery.call(HttpTarget(url(server, "/ok", host="rebind.test")), ENVELOPE)

    assert outcome.final
    assert outcome.error == "refused: rebind.test resolves to 10.1.2.3, a private address"
    assert seen.paths() == []


def test_when_an_address_refuses_the_connection_the_next_one_is_tried(server: Server, seen: Receiver) -> None:
    # The server listens on 127.0.0.1 only: 127.0.0.2 refuses the connection.
    delivery = HttpDelivery(allow_loopback=True, resolver=resolver_to({"hook.test": ["127.0.0.2", "127.0.0.1"]}))

    assert delivery.call(HttpTarget(url(server, "/ok", host="hook.test")), ENVELOPE).ok
    assert seen.paths() == ["/ok"]


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_an_ipv6_literal_url_works_when_loopback_is_allowed(receiver: Receiver, seen: Receiver) -> None:
    v6 = Server("::1", receiver)
    try:
        target = HttpTarget(f"http://[::1]:{v6.port}/ok")
        refused = HttpDelivery().call(target, ENVELOPE)
        allowed = HttpDelivery(allow_loopback=True).call(target, ENVELOPE)
    finally:
        v6.close()

    assert refused.final
    assert refused.error == "refused: ::1 is a loopback address"
    assert allowed.ok
    assert seen.last("/ok").headers["host"] == f"[::1]:{v6.port}"


def test_the_deliverer_sends_http_targets_to_the_http_client(server: Server, seen: Receiver) -> None:
    outcome = Deliverer(HttpDelivery(allow_loopback=True)).deliver(HttpTarget(url(server, "/ok")), ENVELOPE)
    assert outcome.ok
    assert seen.last("/ok").body == EXPECTED_BODY


# --- HTTPS: the pinned IP, the URL's name in SNI and in the certificate check --------------------


@dataclass
class Pki:
    ca_file: str
    context: ssl.SSLContext


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: Any, *, ca: bool, names: list[str]
) -> x509.Certificate:
    now = dt.datetime.now(UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False
        ).add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    return builder.sign(signer, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Pki:
    folder: Path = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Sundial test CA")])
    ca = _certificate("Sundial test CA", ca_key, ca_name, ca_key, ca=True, names=[])
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = _certificate("secure.test", key, ca_name, ca_key, ca=False, names=["secure.test"])
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "leaf.pem", folder / "leaf.key")

    def remember(sock: Any, server_name: str | None, ctx: Any) -> None:
        with receiver.lock:
            receiver.server_names.append(server_name)

    context.sni_callback = remember
    return Pki(str(folder / "ca.pem"), context)


@pytest.fixture(scope="module")
def tls_server(receiver: Receiver, pki: Pki) -> Iterator[Server]:
    running = Server("127.0.0.1", receiver, pki.context)
    yield running
    running.close()


def test_https_connects_to_the_pinned_ip_with_the_url_host_in_sni_and_host(
    tls_server: Server, seen: Receiver, pki: Pki
) -> None:
    delivery = HttpDelivery(
        allow_loopback=True, ca_certs=pki.ca_file, resolver=resolver_to({"secure.test": ["127.0.0.1"]})
    )

    outcome = delivery.call(HttpTarget(f"https://secure.test:{tls_server.port}/ok"), ENVELOPE)

    assert outcome.ok, outcome.error
    assert seen.server_names == ["secure.test"]
    assert seen.last("/ok").headers["host"] == f"secure.test:{tls_server.port}"
    assert seen.last("/ok").body == EXPECTED_BODY


def test_https_checks_the_certificate_against_the_url_host_not_the_ip(
    tls_server: Server, seen: Receiver, pki: Pki
) -> None:
    resolver = resolver_to({"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    trusting = HttpDelivery(allow_loopback=True, ca_certs=pki.ca_file, resolver=resolver)
    system_trust = HttpDelivery(allow_loopback=True, resolver=resolver)

    wrong_name = trusting.call(HttpTarget(f"https://other.test:{tls_server.port}/ok"), ENVELOPE)
    unknown_ca = system_trust.call(HttpTarget(f"https://secure.test:{tls_server.port}/ok"), ENVELOPE)

    for outcome in (wrong_name, unknown_ca):
        assert outcome.final
        assert outcome.error is not None
        assert outcome.error.startswith("TLS certificate verification failed")
    assert seen.paths() == []


def test_neither_an_upgrade_to_https_nor_a_downgrade_is_followed(
    server: Server, tls_server: Server, seen: Receiver, pki: Pki
) -> None:
    delivery = HttpDelivery(
        allow_loopback=True, ca_certs=pki.ca_file, resolver=resolver_to({"secure.test": ["127.0.0.1"]})
    )
    secure = f"https://secure.test:{tls_server.port}"
    plain = f"http://secure.test:{server.port}"

    upgraded = delivery.call(HttpTarget(f"{plain}/redirect?code=308&location={secure}/ok"), ENVELOPE)
    downgraded = delivery.call(HttpTarget(f"{secure}/redirect?code=308&location={plain}/ok"), ENVELOPE)

    assert (upgraded.final, downgraded.final) == (True, True)
    assert upgraded.error == f"HTTP 308 redirect to {secure}/ok not followed"
    assert downgraded.error == f"HTTP 308 redirect to {plain}/ok not followed"
    assert [urlsplit(p).path for p in seen.paths()] == ["/redirect", "/redirect"]
