"""What each connection asks for.

A workload tells the client how many requests a new connection makes and
how large each reply is.  ``one-packet`` is the paper's connection-setup
stress test: one HTTP/1.1 request per connection for a file whose headers
and content fill one packet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from models.fileset import FileSet, FileSetParams
from sim.params import Params, param
from sim.streams import Streams


class Workload(Protocol):
    """The contract a workload offers the client."""

    name: str

    def requests_per_connection(self) -> int:
        """Number of requests the next connection will make (>= 1)."""

    def reply_bytes(self) -> int:
        """Size in bytes (headers plus content) of the reply to the next request."""


@dataclass(frozen=True)
class OnePacketParams(Params):
    _prefix = "workload."

    reply_bytes: int = param(
        1460,
        unit="bytes",
        ge=1,
        doc="headers plus content of the reply, sized to fill one 1460-byte TCP segment",
    )


class OnePacket:
    """One request per connection, one packet per reply."""

    name = "one-packet"

    def __init__(self, params: OnePacketParams, streams: Streams) -> None:
        self._bytes = params.reply_bytes

    def requests_per_connection(self) -> int:
        return 1

    def reply_bytes(self) -> int:
        return self._bytes


WORKLOADS = {"one-packet": (OnePacket, OnePacketParams)}
WORKLOADS["fileset"] = (FileSet, FileSetParams)
