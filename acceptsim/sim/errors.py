"""Errors the engine raises for bad input, and reading a user's file with such errors."""

from __future__ import annotations

import os
import reprlib
import stat
import tomllib
from pathlib import Path
from typing import Any

#: longest shown form of a value (its repr) or field name in an error message (a long path
#: still shows whole; a 100,000-character value does not)
SHOWN_CHARS = 200


def in_file(where: object, exc: ConfigError) -> ConfigError:
    """``exc`` with ``where`` (a file, a scenario) named before its field, so that a bad
    value read from a file says which file it is in."""
    return ConfigError(f"{where}: {exc.field}", exc.value, exc.allowed)


def shorten(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` on one line and at most about ``limit`` characters (the rest counted)."""
    text = " ".join(str(text).splitlines())
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}... ({len(text):,} characters)"


#: how a container value is shown in a message: a few levels and items of it
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 6, 30, 30, 30
_REPR.maxstring = _REPR.maxother = SHOWN_CHARS


class ConfigError(ValueError):
    """A configuration value is not allowed.

    The message always names the field, the value given and what is allowed,
    on one line with long fields and values truncated (``.value`` keeps the
    whole value), so a command-line front end can print it as one line.
    """

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        if isinstance(value, str) and len(value) > SHOWN_CHARS - 20:  # count the text itself
            shown = f"{shorten(repr(value[: SHOWN_CHARS - 20]))}... ({len(value):,} characters)"
        else:  # a container is shown a few levels deep (one 500 tables deep has no end)
            shown = shorten(_REPR.repr(value) if isinstance(value, (dict, list, tuple))
                            else repr(value))  # fmt: skip
        super().__init__(f"{shorten(field, 200)}={shown} is not allowed: {shorten(allowed, 400)}")

    def __reduce__(self) -> tuple[type, tuple[str, object, str]]:
        # picklable, so an error raised in a worker process reaches the caller intact
        return (type(self), (self.field, self.value, self.allowed))


#: the largest file a user may hand over (parameters, scenarios, sessions, run files)
MAX_FILE_BYTES = 64 * 2**20


def read_regular_file(path: str | Path) -> bytes:
    """The bytes of a regular file, at most :data:`MAX_FILE_BYTES` + 1 of them.  It is
    opened without blocking, so a FIFO or a device is refused at once (an OSError saying
    "not a regular file") where a plain ``open`` would wait for a writer forever; a
    symbolic-link loop is the OSError the system gives."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file", str(path))
        return file.read(MAX_FILE_BYTES + 1)


def parse_toml(field: str, path: str | Path, text: str) -> dict[str, Any]:
    """A TOML document a user wrote; not valid TOML, or nested deeper than the parser can
    go (arrays 500 deep), is a :class:`ConfigError` naming ``field`` and the file."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(field, str(path), f"valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(field, str(path), "TOML nested less deeply (arrays or inline "
                          "tables within each other hundreds of levels deep)") from None


def read_user_file(field: str, path: str | Path, what: str) -> str:
    """The text of a file the user named; any failure to read it (missing, a directory or
    device such as /dev/zero, larger than :data:`MAX_FILE_BYTES`, no permission, a name too
    long, not UTF-8 text) is a :class:`ConfigError` naming ``field``, the path and ``what``
    was expected (e.g. "a TOML parameter file")."""
    try:
        data = read_regular_file(path)
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(field, str(path), f"{what} of at most {MAX_FILE_BYTES:,} bytes")
        return data.decode("utf-8")
    except ConfigError:
        raise
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(field, str(path), f"{what} ({reason})") from None
    except (UnicodeDecodeError, ValueError) as exc:  # ValueError: e.g. a NUL in the name
        raise ConfigError(field, str(path), f"{what} (not readable as UTF-8 text: {exc})") from None


def names_a_file(name: str | Path) -> bool:
    """Whether ``name`` is meant as a file rather than a built-in name: something exists
    there (even a directory, a FIFO or a dangling link), or it is written like a path (a
    folder separator, or a ``.toml`` ending).  Reading it then says precisely what is
    wrong with it, where "one of <names>" would not."""
    text = str(name)
    try:
        exists = os.path.lexists(text)
    except (OSError, ValueError):
        exists = False
    return exists or os.sep in text or text.endswith(".toml")


def is_user_file(path: str | Path) -> bool:
    """``Path(path).is_file()``, but False (not an exception) for a name the system cannot
    even look up (too long, a NUL byte), so that the caller's own error names it."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False
