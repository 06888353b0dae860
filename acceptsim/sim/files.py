"""Files a command writes: checked before any work, and written atomically.

:func:`check_output_file` and :func:`check_output_dir` refuse, with a ConfigError naming
the option, an output that could not be written (a directory where a file is expected, a
folder that cannot be created or written), so that no simulation runs for a result that
would then be lost.  :func:`atomic_path` gives a temporary path beside the target, renamed
onto it only when the write succeeded: a failure never leaves a half-written or emptied
file in place of the one that was there.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from acceptsim.sim.errors import ConfigError


def check_utf8_path(field: str, path: str | Path) -> None:
    """A path the file writers take: its name is UTF-8 text (a name with bytes that are
    not, as a shell can pass them, reaches Python as surrogates, which Parquet refuses)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(field, str(path), "a path whose name is UTF-8 text") from None


def expand_user(path: str | Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` made the home directory, as a shell does
    (a quoted ``'~/out'`` reaches the program as it is)."""
    return Path(os.path.expanduser(str(path)))


def check_writable_dir(field: str, directory: str | Path) -> Path:
    """``directory`` exists (or can be made below an existing one) and may be written, with
    ``~`` expanded; the path, expanded."""
    directory = expand_user(directory)
    _writable_dir(field, directory)
    return directory


def _writable_dir(field: str, directory: Path) -> None:
    """``directory`` exists (or can be made below an existing one) and may be written."""
    check_utf8_path(field, directory)
    existing = directory
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(field, str(directory), f"a directory ({existing} is a file)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(field, str(directory), f"a directory this user may write ({existing} "
                          "is not writable)")


def check_output_file(field: str, path: str | Path) -> Path:
    """``path`` can be written as a file: not a directory, its folder writable."""
    path = Path(path)
    check_utf8_path(field, path)
    if path.is_dir():
        raise ConfigError(field, str(path), "a file name (this is a directory)")
    _writable_dir(field, path.parent if str(path.parent) else Path.cwd())
    return path


def check_plot_file(field: str, path: str | Path) -> Path:
    """``path`` can take a figure: a writable file name whose extension is a format
    matplotlib saves (``.png``, ``.pdf``, ``.svg``, ...), checked before any run."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if Path(path).suffix.lower().lstrip(".") not in formats:
        raise ConfigError(field, str(path), "a file name ending in an image format's "
                          f"extension: {', '.join('.' + f for f in formats)}")
    return check_output_file(field, path)


def check_output_dir(field: str, path: str | Path) -> Path:
    """``path`` can be used as an output directory: a directory, or creatable (``~``
    expanded: the path returned)."""
    path = expand_user(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(field, str(path), "a directory (this is a file)")
    _writable_dir(field, path)
    return path


#: the mode open() gives a new file before the umask takes its bits away
NEW_FILE_MODE = 0o666


def current_umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same folder, same suffix) to write to; renamed
    onto ``path`` when the block ends without an exception, removed otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix,
                                dir=path.parent)  # fmt: skip
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        # the mode a new file gets (mkstemp's is 0600 whatever the umask)
        os.chmod(tmp, NEW_FILE_MODE & ~current_umask())
        os.replace(tmp, path)
    except OSError as exc:  # a full disk, a quota: say which file could not be written
        raise ConfigError("output", str(path), f"a file that can be written "
                          f"({exc.strerror or type(exc).__name__})") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    """``path.write_text(text)``, atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
