"""Run the notebooks at full scale and keep the executed copies for the documentation.

The documentation site and the tests run every notebook small (seconds each); a small
run shows how an analysis is done but is too short to conclude from.  This tool runs
each notebook of ``docs/notebooks/`` at full scale (``ACCEPTSIM_NOTEBOOK_SCALE`` unset) and
writes the executed notebook to ``docs/full_scale/``, where the site shows it as it is
(not executed again), with ``docs/full_scale/manifest.json`` recording the digest of the
notebook's cells it ran.  ``check`` fails when a notebook changed since its full-scale
copy was made (the test suite runs it), so the pages never show a stale analysis.

    python tools/full_scale.py run [NAME ...]    # minutes per notebook
    python tools/full_scale.py check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "docs" / "notebooks"
OUT = ROOT / "docs" / "full_scale"
MANIFEST = OUT / "manifest.json"
#: a notebook whose result is the same at every scale (it reads measured runs): no copy
SAME_AT_EVERY_SCALE = ("validate",)
#: the longest a notebook may run at full scale (s)
TIMEOUT_S = 3600


def digest(path: Path) -> str:
    """The notebook's cells (type and source), what its analysis is."""
    cells = json.loads(path.read_text())["cells"]
    text = json.dumps([[c["cell_type"], "".join(c["source"])] for c in cells])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def notebooks() -> list[Path]:
    return [p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if p.stem not in SAME_AT_EVERY_SCALE]


def run(names: list[str]) -> int:
    import nbformat
    from nbclient import NotebookClient

    OUT.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    env_scale = os.environ.pop("ACCEPTSIM_NOTEBOOK_SCALE", None)
    try:
        for path in notebooks():
            if names and path.stem not in names:
                continue
            started = time.perf_counter()
            notebook = nbformat.read(path, as_version=4)
            NotebookClient(notebook, timeout=TIMEOUT_S, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
            target = OUT / path.name
            tmp = target.with_suffix(".ipynb.tmp")
            nbformat.write(notebook, tmp)
            os.replace(tmp, target)
            wall = time.perf_counter() - started
            manifest[path.stem] = {"digest": digest(path), "wall_s": round(wall, 1),
                                   "made": time.strftime("%Y-%m-%d")}
            MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            print(f"{path.name}: {wall:.0f} s -> {target.relative_to(ROOT)}")
    finally:
        if env_scale is not None:
            os.environ["ACCEPTSIM_NOTEBOOK_SCALE"] = env_scale
    return 0


def stale() -> list[str]:
    """Every notebook whose full-scale copy is missing or older than its cells."""
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    out = []
    for path in notebooks():
        entry = manifest.get(path.stem)
        if entry is None or not (OUT / path.name).exists():
            out.append(f"{path.name}: no full-scale copy")
        elif entry["digest"] != digest(path):
            out.append(f"{path.name}: changed since its full-scale copy ({entry['made']})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("run", "check"))
    parser.add_argument("names", nargs="*", help="notebooks to run (default: all)")
    args = parser.parse_args(argv)
    if args.action == "run":
        return run(args.names)
    problems = stale()
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print("run: python tools/full_scale.py run", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
