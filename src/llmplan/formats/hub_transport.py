"""The HTTP client ``huggingface_hub`` uses inside llmplan: every request bounded, nothing retried in a loop.

``huggingface_hub`` makes its requests through one shared ``httpx2.Client`` that it builds with
``set_client_factory`` (its documented hook). Left as it is, it waits forever on a stalled
connection where a call passes ``timeout=None`` (the repo-tree listing does), and it sleeps and
retries up to five times on 429, 5xx and network errors (``http_backoff``: 1+2+4+8+8 s, or the
server's ``Retry-After``). An app that fetches one model on request should answer in seconds
instead, so the client built here:

- caps every phase of a request (connect, read, write, pool) at ``limits.timeout`` seconds and the
  whole response at ``4 × timeout`` seconds and ``limits.max_response_bytes`` bytes;
- turns a 429, a 5xx, a timeout and a refused connection into llmplan's own exceptions below,
  which ``http_backoff`` does not retry, so ``llmplan.formats.hub`` answers at once (and uses
  the cache when there is one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2


@dataclass
class Limits:
    timeout: float = 10.0  # seconds per phase of a request; huggingface_hub's own default (HF_HUB_ETAG_TIMEOUT)
    max_response_bytes: int = 64 * 1024 * 1024  # a config, a tree page or a GGUF header; never weights


limits = Limits()


class HubTransportError(Exception):
    """Base of the failures the bounded client raises instead of retrying."""


class HubUnreachable(HubTransportError):
    """No connection could be made (no network, DNS failure, nothing listening)."""


class HubTimedOut(HubTransportError):
    """The server accepted the connection but did not answer in time."""


class HubRateLimited(HubTransportError):
    def __init__(self, retry_after: int | None) -> None:
        super().__init__(f"HTTP 429 (retry after {retry_after} s)" if retry_after is not None else "HTTP 429")
        self.retry_after = retry_after


class HubServerError(HubTransportError):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class HubResponseTooLarge(HubTransportError):
    """A response went past ``limits.max_response_bytes``."""


def _retry_after(headers: Any) -> int | None:
    value = headers.get("Retry-After") or ""
    if value.strip().isdigit():
        return min(int(value), 86_400)
    for part in str(headers.get("RateLimit") or "").split(";"):
        key, _, number = part.strip().partition("=")
        if key == "t" and number.isdigit():
            return min(int(number), 86_400)
    return None


class _BoundedStream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, deadline: float) -> None:
        self._inner, self._deadline, self._seen = inner, deadline, 0

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._inner:
                self._seen += len(chunk)
                if self._seen > limits.max_response_bytes:
                    raise HubResponseTooLarge(f"a response from the Hub passed {limits.max_response_bytes:,} bytes")
                if time.monotonic() > self._deadline:
                    raise HubTimedOut(f"a response took longer than {4 * limits.timeout:g} s")
                yield chunk
        except httpx2.TimeoutException as exc:
            raise HubTimedOut(str(exc) or "read timed out") from None
        except httpx2.NetworkError as exc:
            raise HubUnreachable(str(exc) or "connection lost") from None

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close:
            close()


class _BoundedTransport(httpx2.BaseTransport):
    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        t = limits.timeout
        given = request.extensions.get("timeout") or {}
        request.extensions = {**request.extensions,
                              "timeout": {k: min(given.get(k) or t, t) for k in ("connect", "read", "write", "pool")}}
        try:
            response = self._inner.handle_request(request)
        except httpx2.TimeoutException as exc:
            raise HubTimedOut(str(exc) or "timed out") from None
        except (httpx2.ConnectError, httpx2.NetworkError) as exc:
            raise HubUnreachable(str(exc) or "connection failed") from None
        if response.status_code == 429 or response.status_code >= 500:
            response.close()
            if response.status_code == 429:
                raise HubRateLimited(_retry_after(response.headers))
            raise HubServerError(response.status_code)
        response.stream = _BoundedStream(response.stream, time.monotonic() + 4 * t)
        return response

    def close(self) -> None:
        self._inner.close()


class _BoundedClient(httpx2.Client):
    """Wraps whichever transport httpx picks (direct or a proxy from the environment)."""

    def _transport_for_url(self, url: httpx2.URL) -> httpx2.BaseTransport:
        inner = super()._transport_for_url(url)
        wrapped = self.__dict__.setdefault("_llmplan_wrapped", {})
        if id(inner) not in wrapped:
            wrapped[id(inner)] = _BoundedTransport(inner)
        return wrapped[id(inner)]


def _client() -> httpx2.Client:
    """The shared client. huggingface_hub's own request hook is left out: it only adds a trace id and
    refuses requests when ``HF_HUB_OFFLINE`` was set when the library was imported; llmplan reads
    ``HF_HUB_OFFLINE`` itself at each fetch (``hub_cache.offline``), so one offline moment never
    leaves a long-running app offline for good."""
    return _BoundedClient(follow_redirects=True, timeout=limits.timeout)


_installed = threading.Lock()
_done = False


def install() -> None:
    """Make ``huggingface_hub`` use the bounded client (once per process)."""
    global _done
    with _installed:
        if not _done:
            from huggingface_hub import set_client_factory

            set_client_factory(_client)
            _done = True
