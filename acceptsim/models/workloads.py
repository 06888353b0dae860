"""What each connection asks for.

A workload tells the client how many requests a new connection makes and
how large each reply is.  ``one-packet`` is the paper's connection-setup
stress test: one HTTP/1.1 request per connection for a file whose headers
and content fill one packet.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from acceptsim.models.fileset import FileSet, FileSetParams
from acceptsim.sim.errors import ConfigError, read_user_file
from acceptsim.sim.params import Params, ascii_number, param
from acceptsim.sim.streams import Streams

if TYPE_CHECKING:
    from acceptsim.models.connection import Connection


class Workload(Protocol):
    """The contract a workload offers the client."""

    name: str

    def requests_per_connection(self) -> int:
        """Number of requests the next connection will make (>= 1)."""

    def reply_bytes(self) -> int:
        """Size in bytes (headers plus content) of the reply to the next request."""

    def mean_requests_per_connection(self) -> float:
        """Expected requests per connection (target request rate = rate * this)."""

    # Optional hooks, used by the client when a workload defines them:
    #   start_connection(conn): set conn.requests_left (requests after the first) and
    #       conn.reply_bytes (the first reply) instead of the two calls above; the workload
    #       may keep per-connection state in conn.session;
    #   think_time(conn) -> float: seconds the client waits after a reply before its next
    #       request on this connection; a workload with start_connection also sets
    #       conn.reply_bytes for that next request here;
    #   think_draw: a zero-argument sampler of think times, or None (no think time), for a
    #       workload whose think time does not depend on the connection: the client then
    #       calls it directly instead of think_time (a call without a Python frame);
    #   fixed_shape: (requests per connection, reply bytes) when every connection and
    #       reply is the same, so the client need not ask per connection.


@dataclass(frozen=True)
class OnePacketParams(Params):
    _prefix = "workload."

    reply_bytes: int = param(
        1448,
        unit="bytes",
        ge=1,
        doc="headers plus content of the reply, sized to fill one TCP segment (the kernel "
        "profile's mss_bytes, 1448 with timestamps)",
    )


class OnePacket:
    """One request per connection, one packet per reply."""

    name = "one-packet"

    def __init__(self, params: OnePacketParams, streams: Streams) -> None:
        self._bytes = params.reply_bytes
        #: every connection alike (see :class:`Workload`)
        self.fixed_shape = (1, params.reply_bytes)

    def requests_per_connection(self) -> int:
        return 1

    def reply_bytes(self) -> int:
        return self._bytes

    def mean_requests_per_connection(self) -> float:
        return 1.0


# -- SPECweb99-like ------------------------------------------------------------------

#: request shares of SPECweb99's four file classes
SPECWEB_CLASS_SHARES = (0.35, 0.50, 0.14, 0.01)
#: smallest file of each class; the nine files of class c are k * base, k = 1..9
#: (class 0: 102..922 B, class 1: 1..9 KB, class 2: 10..90 KB, class 3: 100..900 KB)
SPECWEB_CLASS_BASE_BYTES = (102.4, 1024.0, 10240.0, 102400.0)
SPECWEB_FILES_PER_CLASS = 9


@dataclass(frozen=True)
class SpecWeb99Params(Params):
    _prefix = "workload."

    mean_requests: float = param(
        7.2,
        unit="requests/connection",
        ge=1.0,
        doc="mean requests per persistent connection (SPECweb99-like, the paper); the "
        "number is geometric on 1, 2, ... with this mean",
    )
    zipf_exponent: float = param(
        1.0,
        unit="",
        ge=0.0,
        doc="Zipf exponent of file popularity within a class (file k has weight k**-s)",
    )
    header_bytes: int = param(
        250, unit="bytes", ge=0, doc="HTTP response headers added to every file"
    )
    think_mean_s: float = param(
        14.5e-3,
        unit="s",
        ge=0.0,
        doc="mean (exponential) client think time between the requests of a connection "
        "(httperf --wsesslog=N,X,file: X is the think time between a session's requests); "
        "the connection stays open, and in select()'s descriptor set, meanwhile.  0 = "
        "back-to-back requests",
        fitted="fitted to the paper's +39% of userver accept-limit inf over 1 at 30,000 target "
        "requests/s under the paper's protocol (ratio of reply rates 1.39, mean of seeds 1-2, "
        "two-minute runs from the start; brentq gives 14.498 ms and 1.3899), with replies "
        "sent as segments through the send buffer and the links (acceptsim/models/tcp.py); 7.1 ms "
        "before them (10 s runs).  Without think time the ratio is 1.035; see `acceptsim "
        "calibrate-paper specweb` and acceptsim/models/calibration_results.toml",
    )


def specweb_file_table(params: SpecWeb99Params) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reply sizes, request probabilities and class of the 36 files."""
    sizes, probs, classes = [], [], []
    ranks = np.arange(1, SPECWEB_FILES_PER_CLASS + 1, dtype=float)
    weights = ranks ** -params.zipf_exponent
    weights /= weights.sum()
    for c, (share, base) in enumerate(
        zip(SPECWEB_CLASS_SHARES, SPECWEB_CLASS_BASE_BYTES, strict=True)
    ):
        for k in range(SPECWEB_FILES_PER_CLASS):
            sizes.append(round(base * (k + 1)) + params.header_bytes)
            probs.append(share * weights[k])
            classes.append(c)
    return np.array(sizes), np.array(probs), np.array(classes)


class SpecWeb99:
    """Persistent connections over SPECweb99's static file set.

    Every request picks a class by its share, then a file within the class by
    Zipf popularity.  SPECweb99 also spreads requests over directories with a
    Zipf law; directories only change *which* copy of a file is read, not its
    size, and the file set is in memory, so they are not drawn here.
    """

    name = "specweb99"

    def __init__(self, params: SpecWeb99Params, streams: Streams) -> None:
        self.params = params
        sizes, probs, _ = specweb_file_table(params)
        self._sizes = sizes
        self._probs = probs
        # a request's reply size and a connection's request count are the streams'
        # samplers themselves, drawn as integers: a call is a C-level call, with no
        # Python frame of its own, once per request and per connection
        self.reply_bytes = cast(Callable[[], int], streams.sampler(
            "specweb99.file", lambda g, n: sizes[g.choice(len(sizes), n, p=probs)]
        ))  # fmt: skip
        p = 1.0 / params.mean_requests
        self.requests_per_connection = cast(Callable[[], int], streams.sampler(
            "specweb99.requests", lambda g, n: g.geometric(p, n)
        ))  # fmt: skip
        think = params.think_mean_s
        #: the client's hook (see Workload): the stream's sampler itself, or None
        self.think_draw = (streams.exponential("specweb99.think", think) if think > 0
                           else None)

    def think_time(self, conn: Connection) -> float:
        return self.think_draw() if self.think_draw is not None else 0.0

    def mean_requests_per_connection(self) -> float:
        return self.params.mean_requests

    def mean_reply_bytes(self) -> float:
        return float((self._sizes * self._probs).sum())


# -- httperf --wsesslog session files --------------------------------------------------


@dataclass(frozen=True)
class WsesslogParams(Params):
    _prefix = "workload."

    path: str = param("", unit="", doc="httperf --wsesslog session file (required)")
    reply_bytes: int = param(
        1448,
        unit="bytes",
        ge=1,
        doc="reply size of a request whose line has no size= attribute (one segment)",
    )


@dataclass(frozen=True)
class Request:
    uri: str
    reply_bytes: int
    think_s: float  # after this request's reply, before the next one


_ATTRS = ("method", "contents", "think", "size")


#: the largest reply a session file may ask for (bytes): 1 GiB, far beyond any page, and
#: a size whose arithmetic stays within 64 bits wherever it is multiplied
MAX_REPLY_BYTES = 2**30


def parse_wsesslog(path: str | Path, default_bytes: int = 1460) -> list[list[Request]]:
    """Parse an httperf ``--wsesslog`` file into sessions of requests.

    One URI per line followed by ``key=value`` attributes (``think=`` seconds,
    ``method=``, ``contents=``, and acceptsim's ``size=`` reply bytes); a
    blank line ends a session; ``#`` starts a comment; lines indented with
    whitespace (httperf's burst members) are requests like any other.  Errors
    name the file and line.
    """
    path = Path(path)
    field = "workload.path"
    text = read_user_file(field, path, "a readable session file (httperf --wsesslog)")
    sessions: list[list[Request]] = []
    current: list[Request] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            if raw.strip() == "" and current:
                sessions.append(current)
                current = []
            continue
        where = f"{path}:{number}"
        uri, *attrs = line.split()
        if not uri.startswith("/"):
            raise ConfigError(field, where, f"a line starting with a URI ('/...'), got {uri!r}")
        think = 0.0
        size = default_bytes
        for attr in attrs:
            key, eq, value = attr.partition("=")
            if not eq or key not in _ATTRS:
                raise ConfigError(
                    field, where, f"attributes of the form key=value with key one of "
                    f"{', '.join(_ATTRS)}; got {attr!r}"
                )
            if key == "think":
                try:
                    think = ascii_number(value)
                except ValueError:
                    think = math.nan
                if not math.isfinite(think) or think < 0:
                    raise ConfigError(
                        field, where, f"think= a number of seconds >= 0, got {value!r}"
                    )
            elif key == "size":
                digits = value.isascii() and value.isdigit()
                if not digits or not 1 <= int(value) <= MAX_REPLY_BYTES:
                    raise ConfigError(field, where, f"size= an integer from 1 to "
                                      f"{MAX_REPLY_BYTES:,} (bytes), got {value!r}")
                size = int(value)
        current.append(Request(uri, size, think))
    if current:
        sessions.append(current)
    if not sessions:
        raise ConfigError(field, str(path), "a session file with at least one request")
    return sessions


class Wsesslog:
    """Sessions from a session file, one persistent connection each, drawn in turn.

    As httperf does, sessions are used in the order of the file, cycling.
    """

    name = "wsesslog"

    def __init__(self, params: WsesslogParams, streams: Streams) -> None:
        if not params.path:
            raise ConfigError("workload.path", params.path, "a session file (--workload-file)")
        self.sessions = parse_wsesslog(params.path, params.reply_bytes)
        self._next = 0

    def start_connection(self, conn: Connection) -> None:
        session = self.sessions[self._next]
        self._next = (self._next + 1) % len(self.sessions)
        conn.session = session
        conn.requests_left = len(session) - 1
        conn.reply_bytes = session[0].reply_bytes

    def think_time(self, conn: Connection) -> float:
        session: list[Request] = conn.session  # type: ignore[assignment]
        index = len(session) - 1 - conn.requests_left  # the request about to be made
        conn.reply_bytes = session[index].reply_bytes
        return session[index - 1].think_s

    def requests_per_connection(self) -> int:
        raise NotImplementedError("Wsesslog uses start_connection")

    def reply_bytes(self) -> int:
        raise NotImplementedError("Wsesslog uses start_connection")

    def mean_requests_per_connection(self) -> float:
        return sum(len(s) for s in self.sessions) / len(self.sessions)


WORKLOADS = {
    "one-packet": (OnePacket, OnePacketParams),
    "specweb99": (SpecWeb99, SpecWeb99Params),
    "wsesslog": (Wsesslog, WsesslogParams),
}
WORKLOADS["fileset"] = (FileSet, FileSetParams)
