"""A Server-Sent Events reader bounded by one deadline.

A socket timeout bounds each read, and the server's keepalive comments (every
15 s) would restart it for ever. So the stream is read on a helper thread
and handed over through a queue: the caller waits on the queue only until
its deadline, then shuts the socket down (which wakes the reader) and
returns on time, whatever the server sends.
"""

from __future__ import annotations

import logging
import queue
import socket
import threading
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

import httpx

from ._deadline import Deadline
from ._errors import ConnectionFailed, CountersignError, error_from_response

__all__ = ["SseEvent", "read_events"]

log = logging.getLogger("countersign")


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str
    id: str | None


@dataclass(frozen=True)
class _End:
    pass


_Item: TypeAlias = SseEvent | _End | BaseException


class _Reader:
    def __init__(
        self,
        http: httpx.Client,
        url: str,
        headers: Mapping[str, str],
        deadline: Deadline,
        connect_timeout: float,
    ) -> None:
        self.http, self.url, self.headers = http, url, dict(headers)
        self.deadline, self.connect_timeout = deadline, connect_timeout
        self.items: queue.Queue[_Item] = queue.Queue()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.thread = threading.Thread(target=self.run, name="countersign-sse", daemon=True)

    def run(self) -> None:
        try:
            remaining = self.deadline.remaining()
            # The read timeout only bounds this thread's life should the
            # shutdown below ever fail; the caller does not depend on it.
            timeout = httpx.Timeout(
                connect=min(self.connect_timeout, remaining) + 0.5, read=remaining + 5, write=10, pool=10
            )
            with self.http.stream("GET", self.url, headers=self.headers, timeout=timeout) as resp:
                if resp.status_code != 200:
                    resp.read()
                    try:
                        body = resp.json()
                    except ValueError:
                        body = resp.text
                    self.items.put(error_from_response(resp.status_code, resp.headers, body))
                    return
                ctype = resp.headers.get("content-type", "")
                if not ctype.startswith("text/event-stream"):
                    self.items.put(ConnectionFailed(f"the event stream answered {ctype or 'no content type'}"))
                    return
                stream = resp.extensions.get("network_stream")
                sock = stream.get_extra_info("socket") if stream is not None else None
                with self.lock:
                    self.sock = sock if isinstance(sock, socket.socket) else None
                try:
                    self._parse(resp)
                finally:
                    with self.lock:
                        self.sock = None
        except httpx.TransportError as err:
            if not self.stop.is_set():
                self.items.put(ConnectionFailed(f"the event stream broke: {err!r}"))
        except BaseException as err:  # handed to the caller, who raises it
            if not self.stop.is_set():
                self.items.put(err)

    def _parse(self, resp: httpx.Response) -> None:
        event, last_id = "", None
        data: list[str] = []
        for line in resp.iter_lines():
            if self.stop.is_set():
                return
            if line == "":
                if data:
                    self.items.put(SseEvent(event=event or "message", data="\n".join(data), id=last_id))
                event, data = "", []
                continue
            if line.startswith(":"):
                continue  # a comment: the keepalive
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
            elif name == "id" and "\0" not in value:
                last_id = value
        self.items.put(_End())

    def close(self) -> None:
        """Stops the reader; never blocks for long."""
        self.stop.set()
        with self.lock:
            if self.sock is not None:
                try:
                    self.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.thread.join(timeout=0.25)


def read_events(
    http: httpx.Client,
    url: str,
    headers: Mapping[str, str],
    deadline: Deadline,
    *,
    connect_timeout: float,
) -> Generator[SseEvent, None, None]:
    """The stream's events until it ends, or until ``deadline`` (then it
    simply stops: the caller checks the deadline). Raises the typed error of
    a refused request, or :class:`ConnectionFailed`."""
    if deadline.expired():
        return
    headers = {**headers, "Accept": "text/event-stream", "Cache-Control": "no-cache", "Connection": "close"}
    reader = _Reader(http, url, headers, deadline, connect_timeout)
    reader.thread.start()
    try:
        while True:
            remaining = deadline.remaining()
            if remaining <= 0:
                return
            try:
                item = reader.items.get(timeout=remaining)
            except queue.Empty:
                return
            if isinstance(item, _End):
                return
            if isinstance(item, CountersignError):
                raise item
            if isinstance(item, BaseException):
                raise ConnectionFailed(f"the event stream failed: {item!r}") from item
            yield item
    finally:
        reader.close()
