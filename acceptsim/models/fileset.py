"""A file-set workload whose data set can exceed the server's memory.

SPECweb99's static file set, scaled by a data-set size: the set is made of
directories of 36 files, four classes of nine files each (class 0: 102..922
bytes, class 1: 1..9 KB, class 2: 10..90 KB, class 3: 100..900 KB; file k of
a class is k times the class's base size), 5.1 MB per directory.  A request
picks its class by SPECweb99's mix (35%, 50%, 14%, 1%), its file within the
class by Zipf popularity over the nine files, and its directory by Zipf
popularity over the directories.  The data set grows by adding directories,
so a larger set has a longer tail of rarely requested files: the working
set a cache must hold grows with it, which is what the Flash experiments
vary.

Each reply size is a :class:`FileReply`: an ``int`` (the bytes the server
sends, all the client and the servers' send costs need) that also names
the file, for servers that cache files (``reply.file``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from acceptsim.sim.errors import ConfigError
from acceptsim.sim.params import Params, param
from acceptsim.sim.streams import Streams

#: base size of each class in bytes (file k of a class is k times it), SPECweb99
CLASS_BASE_BYTES = (102.4, 1024.0, 10240.0, 102400.0)
FILES_PER_CLASS = 9


class FileReply(int):
    """A reply size in bytes that knows which file it is the size of."""

    file: int

    def __new__(cls, nbytes: int, file: int) -> FileReply:
        obj = super().__new__(cls, nbytes)
        obj.file = file
        return obj


@dataclass(frozen=True)
class FileSetParams(Params):
    _prefix = "workload."

    dataset_bytes: float = param(
        200e6, unit="bytes", gt=0.0, le=10e9,
        doc="total size of the file set; whole directories of 5.1 MB (at least one); at most "
        "10 GB (about 70,000 files, each a record in memory)",
    )
    class_mix: str = param(
        "0.35,0.50,0.14,0.01", unit="fractions",
        doc="request shares of the four size classes (SPECweb99)",
    )
    dir_zipf_alpha: float = param(
        1.0, unit="", ge=0.0, doc="Zipf exponent of directory popularity (SPECweb99: 1)"
    )
    file_zipf_alpha: float = param(
        1.0, unit="", ge=0.0, doc="Zipf exponent of file popularity within a class (1)"
    )
    requests_per_connection: int = param(
        1, unit="requests", ge=1, doc="requests per connection (HTTP/1.0 in the Flash paper: 1)"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if _mix(self.class_mix) is None:
            raise ConfigError(
                "workload.class_mix", self.class_mix, "four non-negative numbers summing to 1"
            )


def _mix(text: str) -> list[float] | None:
    try:
        mix = [float(x) for x in text.split(",")]
    except ValueError:
        return None
    if len(mix) != 4 or min(mix) < 0 or abs(sum(mix) - 1.0) > 1e-6:
        return None
    return mix


def _zipf(n: int, alpha: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** alpha
    return w / w.sum()


class FileSet:
    """Requests for files of a SPECweb99-like file set of a given size."""

    name = "fileset"

    def __init__(self, params: FileSetParams, streams: Streams) -> None:
        self.params = params
        per_dir = sum(base * k for base in CLASS_BASE_BYTES for k in range(1, 10))
        self.directories = max(1, round(params.dataset_bytes / per_dir))
        mix = np.asarray(_mix(params.class_mix))
        within = _zipf(FILES_PER_CLASS, params.file_zipf_alpha)
        dirs = _zipf(self.directories, params.dir_zipf_alpha)
        # file id = (directory * 4 + class) * 9 + (k - 1)
        probs = (dirs[:, None, None] * mix[None, :, None] * within[None, None, :]).ravel()
        sizes = [
            int(CLASS_BASE_BYTES[c] * k)
            for _ in range(self.directories)
            for c in range(len(CLASS_BASE_BYTES))
            for k in range(1, FILES_PER_CLASS + 1)
        ]
        self.replies = [FileReply(size, i) for i, size in enumerate(sizes)]
        self.dataset_bytes = sum(sizes)
        self.mean_reply_bytes = float(np.dot(probs, sizes))
        n = len(sizes)
        probs = probs / probs.sum()
        order = np.argsort(-probs, kind="stable")
        #: (file, size) pairs, most popular first
        self.by_popularity = [(int(i), sizes[i]) for i in order]
        self._pick = streams.sampler("files", lambda g, k: g.choice(n, size=k, p=probs))
        self._requests = params.requests_per_connection

    def requests_per_connection(self) -> int:
        return self._requests

    def mean_requests_per_connection(self) -> float:
        return float(self._requests)

    def reply_bytes(self) -> int:
        return self.replies[int(self._pick())]
