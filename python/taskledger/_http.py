"""The HTTP transport to `taskledger serve` (docs/openapi.yaml) for
taskledger.service, on the standard library only: http.client with one
keep-alive connection per service URL and thread, `https://` with an
optional CA file (and client certificate), several URLs tried in order.

Failover: a request that reached no service (connection refused, reset,
timeout on connect) or was answered 503 goes to the next URL; the URL that
answered is tried first next time. Resending is safe by the API's contract:
a service answers only after it committed, and a call proposed again under
the same id gets its recorded outcome, never a second lease. Every other
status raises at once, as the ServiceError subclass of its status (each is
also the in-process exception a caller already catches: 404 is a NotFound,
409 a Conflict, ...). Thread-safety: a ServiceClient may be shared between
threads; each thread has its own connections.
"""

import http.client
import json
import socket
import ssl
import threading
import urllib.parse

from taskledger._core import (
    Conflict,
    Error,
    Internal,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    Timeout,
    Unavailable,
)


class ServiceError(Error):
    """An error answered by a taskledger service, or no service reachable.
    `status` is the HTTP status (0: no service answered), `service_code` the
    service's error code ("invalid_argument", "unauthorized", ...), `url` the
    service that answered."""

    code = "service"

    def __init__(self, message, status=0, service_code="unreachable", url=""):
        super().__init__(message)
        self.status = status
        self.service_code = service_code
        self.url = url


class Unauthorized(ServiceError):
    """401: no token, or a token the service does not know."""


class Forbidden(ServiceError):
    """403: the token may not do this (approve and deny need an operator token)."""


class PayloadTooLarge(ServiceError, LimitExceeded):
    """413: the request body is larger than the service accepts (--max-body-bytes)."""


class TooManyRequests(ServiceError, LimitExceeded):
    """429: the tenant has too many requests running; nothing was done, retry later."""


class ServiceUnavailable(ServiceError, Unavailable):
    """No service reachable, or every one answered 503: nothing was written."""


class ServiceInvalidArgument(ServiceError, InvalidArgument):
    """400: the service refused the request's fields (nothing was written)."""


class ServiceNotFound(ServiceError, NotFound):
    """404: an unknown route or command."""


class ServiceConflict(ServiceError, Conflict):
    """409: the conversation kept changing, or the lease is not this client's any more."""


class ServiceTimeout(ServiceError, Timeout):
    """504: the request ran past the service's time limit (--time-limit-ms);
    it committed nothing, so it may simply be retried."""


class ServiceInternal(ServiceError, Internal):
    """Another 5xx, or an answer that is not the service's JSON."""


_BY_STATUS = {400: ServiceInvalidArgument, 401: Unauthorized, 403: Forbidden,
              404: ServiceNotFound, 409: ServiceConflict, 413: PayloadTooLarge,
              429: TooManyRequests, 503: ServiceUnavailable, 504: ServiceTimeout}

# What a connection can raise when the service is gone or closed an idle
# keep-alive connection: the request did not reach a service.
_UNREACHED = (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine,
              socket.timeout, OSError)


def _error_for(status, service_code, message, url):
    cls = _BY_STATUS.get(status, ServiceInternal if status >= 500 or status == 0 else ServiceError)
    return cls(message, status, service_code, url)


class _Target:
    """One service URL: scheme, host, port, path prefix."""

    def __init__(self, url):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidArgument(
                f"a service URL is http://HOST:PORT or https://HOST:PORT, not {url!r}")
        if parts.query or parts.fragment:
            raise InvalidArgument(f"a service URL has no query or fragment: {url!r}")
        self.url = url.rstrip("/")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")


class ServiceClient:
    """Sends JSON requests to one of several service URLs (see the module
    docstring). `token`: the tenant's bearer token when the service runs
    with --tokens. `ca_file`: the CA bundle that signed an https service's
    certificate (default: the system's). `cert_file`/`key_file`: a client
    certificate, for a service started with --tls-client-ca. `timeout`:
    seconds per request."""

    def __init__(self, urls, *, token=None, ca_file=None, cert_file=None, key_file=None,
                 timeout=10.0):
        if isinstance(urls, str):
            urls = [urls]
        urls = list(urls)
        if not urls:
            raise InvalidArgument("at least one service URL is needed")
        if not timeout or timeout <= 0:
            raise InvalidArgument("timeout must be positive")
        self.targets = [_Target(u) for u in urls]
        self.token = token
        self.timeout = float(timeout)
        self._ssl = None
        if any(t.https for t in self.targets):
            self._ssl = ssl.create_default_context(cafile=ca_file)
            if cert_file:
                self._ssl.load_cert_chain(cert_file, key_file)
        self._local = threading.local()
        self._next = 0

    @property
    def urls(self):
        return [t.url for t in self.targets]

    def post(self, path, body):
        """POSTs `body` (a dict) to `path`; returns the decoded answer."""
        return self.send("POST", path, body)

    def send(self, method, path, body=None):
        last = None
        first = self._next
        for i in range(len(self.targets)):
            index = (first + i) % len(self.targets)
            try:
                answer = self._send_to(self.targets[index], method, path, body)
            except ServiceUnavailable as e:
                last = e
                continue
            self._next = index
            return answer
        raise last

    def close(self):
        """Closes this thread's connections."""
        for conn in getattr(self._local, "conns", {}).values():
            conn.close()
        self._local.conns = {}

    def _connection(self, target):
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        conn = conns.get(target.url)
        if conn is None:
            if target.https:
                conn = http.client.HTTPSConnection(target.host, target.port, timeout=self.timeout,
                                                   context=self._ssl)
            else:
                conn = http.client.HTTPConnection(target.host, target.port, timeout=self.timeout)
            conns[target.url] = conn
        return conn

    def _drop(self, target):
        conn = self._local.conns.pop(target.url, None)
        if conn is not None:
            conn.close()

    def _send_to(self, target, method, path, body):
        payload = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        # A kept-alive connection the service closed while idle fails on its
        # first use: one fresh connection is tried before giving up on it.
        for attempt in range(2):
            conn = self._connection(target)
            reused = conn.sock is not None
            try:
                conn.request(method, target.prefix + path, body=payload, headers=headers)
                response = conn.getresponse()
                text = response.read()
            except ssl.SSLError as e:
                self._drop(target)
                raise ServiceUnavailable(f"{target.url}{path}: TLS: {e}", 0, "tls", target.url)
            except _UNREACHED as e:
                self._drop(target)
                if reused and attempt == 0 and not isinstance(e, socket.timeout):
                    continue  # a stale kept-alive connection, not a slow service
                raise ServiceUnavailable(f"{target.url}{path}: {e or type(e).__name__}", 0,
                                         "unreachable", target.url)
            if response.will_close:
                self._drop(target)
            return _decode(target, path, response.status, text)
        raise AssertionError("unreachable")  # the loop returns or raises


def _decode(target, path, status, text):
    try:
        answer = json.loads(text) if text else {}
    except ValueError:
        raise _error_for(status if status >= 400 else 500, "bad_response",
                         f"{target.url}{path}: HTTP {status}, not JSON: "
                         f"{text[:200].decode('utf-8', 'replace')}", target.url)
    if 200 <= status < 300:
        return answer
    err = answer.get("error", {}) if isinstance(answer, dict) else {}
    code = err.get("code", f"http_{status}")
    message = err.get("message", f"HTTP {status}")
    raise _error_for(status, code, f"{message} ({code}, HTTP {status} from {target.url})",
                     target.url)
