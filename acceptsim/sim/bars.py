"""Where progress is shown: a widget in a Jupyter kernel, a bar on a terminal, nothing
otherwise (CI, a pipe, a file), and nothing when the caller asked for quiet.

tqdm's own ``disable=None`` looks only at whether stderr is a terminal, which a
kernel's is not, so notebooks saw no progress through minute-long cells; the bars are
made through ``tqdm.auto`` (the widget in a kernel) with :func:`show_progress`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from tqdm import TqdmWarning

with warnings.catch_warnings():  # in a kernel without ipywidgets: a text bar, no warning
    warnings.simplefilter("ignore", TqdmWarning)
    from tqdm.auto import tqdm


def in_kernel() -> bool:
    """Running in a Jupyter (IPython) kernel: its display shows a progress widget."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    get = getattr(shell, "get_ipython", None)
    ip = get() if get is not None else None
    return ip is not None and getattr(ip, "kernel", None) is not None


def show_progress(asked: bool = True) -> bool:
    """Whether to show a bar: asked for, and in a kernel or on a terminal."""
    if not asked:
        return False
    if in_kernel():
        return True
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


def bar(asked: bool = True, **kwargs: Any) -> Any:
    """A tqdm bar (a widget in a kernel), disabled unless :func:`show_progress`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        return tqdm(disable=not show_progress(asked), **kwargs)
