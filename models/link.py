"""The server's network link: bytes leave one after another at the link's rate.

A first-come first-served byte server.  A process writes a chunk of a reply
into its socket's send buffer (``send``); the chunk leaves when everything
queued before it has left, and ``done(value)`` is then called.  Small
replies queued behind large chunks of other connections wait for them:
this is how bulk transfers slow interactive ones on a shared link.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acceptsim.sim.engine import Environment


class Link:
    """A link of ``bytes_per_s``; chunks are sent in the order they were written."""

    def __init__(self, env: Environment, bytes_per_s: float) -> None:
        self.env = env
        self.bytes_per_s = bytes_per_s
        self._queue: deque[tuple[float, Callable[[Any], None], Any]] = deque()
        self.busy = False
        self.bytes_sent = 0.0
        self.busy_time = 0.0

    def send(self, nbytes: float, done: Callable[[Any], None], value: Any = None) -> None:
        self._queue.append((nbytes, done, value))
        if not self.busy:
            self._start()

    def _start(self) -> None:
        self.busy = True
        self.env.call_in(self._queue[0][0] / self.bytes_per_s, self._sent)

    def _sent(self, _: Any) -> None:
        nbytes, done, value = self._queue.popleft()
        self.bytes_sent += nbytes
        self.busy_time += nbytes / self.bytes_per_s
        if self._queue:
            self._start()
        else:
            self.busy = False
        done(value)

    @property
    def queued_bytes(self) -> float:
        return sum(n for n, _, _ in self._queue)
