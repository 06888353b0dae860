"""The error raised for measured-run files that cannot be read."""

from __future__ import annotations

from pathlib import Path


def read_text(path: str | Path) -> str:
    """A measured-run file's text; a ParseError if it is missing, not a regular file
    (a device, a FIFO), larger than 64 MiB or not text."""
    from acceptsim.sim.errors import MAX_FILE_BYTES, read_regular_file

    try:
        data = read_regular_file(path)
    except FileNotFoundError:
        raise ParseError(path, 0, "file not found") from None
    except OSError as exc:
        raise ParseError(path, 0, exc.strerror or type(exc).__name__) from None
    if len(data) > MAX_FILE_BYTES:
        raise ParseError(path, 0, f"larger than {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(path, 1, f"not text ({exc.reason})") from None


class ParseError(ValueError):
    """A measured-run file has a line we do not understand, or ends too early.

    The message names the file and the (1-based) line number, so it can be
    printed as one line: ``httperf.txt:14: unknown line 'Foo: 3'``.
    """

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}")
