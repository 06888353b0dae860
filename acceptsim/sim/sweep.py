"""Running many configurations: in parallel or on a cluster, one tidy row per run.

Two levels:

* ``run_many(run, points, jobs)`` calls ``run(point)`` for every point (a
  mapping of configuration fields) and returns the records in the order of
  ``points``, whatever order they finished in.
* :func:`sweep` runs a whole experiment: every point of a scenario times a
  number of replications, on local cores (a process pool) or on a Dask
  cluster, writing each finished run to disk at once so that an interrupted
  sweep resumes where it stopped, and returns a tidy :class:`pandas.DataFrame`.

The engine knows nothing about the model it runs.  A sweep is given a *run
function* (point -> flat-able result record) and optionally a *normalise*
function (point -> the full, validated configuration, e.g. with defaults
filled in).  When neither is given, :func:`sweep` imports the domain's
(:mod:`acceptsim.models.runner`) at call time, so ``import sim`` stays model-free.

Reproducibility
    A run's result depends only on its configuration.  Replication ``r`` of
    a point whose ``seed`` is ``s`` runs with seed :func:`replication_seed`
    ``(s, r)`` (numpy ``SeedSequence(s, spawn_key=(r,))``), never with
    anything about the worker or the order.  Every point of a sweep with the
    same base seed therefore uses the same seed in replication ``r``: the
    configurations compared see the same random numbers (common random
    numbers).

Storage (``out=PATH``)
    ``PATH/parts/<key>.parquet`` holds one finished run (one row), written
    atomically (temporary file, then rename) the moment the run finishes;
    ``<key>`` is :func:`run_key`, a hash of the run's full configuration and
    replication.  A resumed sweep (``resume=True``) reads the parts whose
    keys it needs and runs only the others, so nothing is lost or run twice,
    whether the sweep was interrupted, a worker died or the machine stopped.
    ``PATH/results.parquet`` is the combined table (rewritten at the end of
    every sweep) with the sweep's description and package versions in its
    Parquet metadata (key ``sim.sweep``); ``PATH/manifest.json`` holds the
    same description.

Columns
    ``run_key``, ``replication``, ``base_seed``, then every configuration
    field (nested tables flattened with dots, e.g. ``costs.request_s``), then
    every field of the run's record (flattened the same way; a record field
    with the name of a configuration field overwrites it).  Columns named
    ``sim_*`` measure the simulator itself (CPU time, speed), not the model,
    and are the only ones that differ between repetitions of a run; see
    :func:`deterministic`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import os
import platform
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.std import tqdm  # the base of every bar (the notebook widget included)

from acceptsim.sim import bars
from acceptsim.sim.errors import ConfigError, in_file, names_a_file, read_user_file
from acceptsim.sim.results import flatten, json_safe
from acceptsim.sim.scenario import Scenario, check_sweep_values
from acceptsim.sim.scenario import load as load_scenario
from acceptsim.sim.stats import StoppingRule, summarise

RunFn = Callable[[Mapping[str, Any]], dict[str, Any]]
NormaliseFn = Callable[[Mapping[str, Any]], dict[str, Any]]
#: ``check(config, force)``: raise ConfigError if one run's expected work is beyond its bound
CheckFn = Callable[[Mapping[str, Any], bool], Any]

#: the most runs (points x replications, x the stopping rule's maximum) a sweep starts
#: without ``force``: at a second or more per run, hours of every core
MAX_RUNS = 10_000

#: columns added by the sweep in front of the configuration
META_COLUMNS = ("run_key", "replication", "base_seed")
#: prefix of columns that measure the simulator rather than the model
SIMULATOR_PREFIX = "sim_"
#: name of the Parquet metadata entry that describes a sweep
METADATA_KEY = b"sim.sweep"


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# -- the simple level ---------------------------------------------------------------------------
def run_many(
    run: RunFn, points: Sequence[Mapping[str, Any]], jobs: int | None = None, progress: bool = True
) -> list[dict[str, Any]]:
    """``[run(p) for p in points]``, on ``jobs`` processes (default: every core)."""
    results: list[dict[str, Any] | None] = [None] * len(points)
    for i, record in run_each(run, points, jobs, progress):
        results[i] = record
    return results  # type: ignore[return-value]


def run_each(
    run: RunFn, points: Sequence[Mapping[str, Any]], jobs: int | None = None,
    progress: bool = True, desc: str = "runs",
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(i, run(points[i]))`` for every point, as each finishes, on ``jobs`` processes
    (default: every core) of one pool: the caller keeps each result the moment it
    arrives.  The runs start in the order of ``points`` (put the longest first, so that
    no core idles at the end while another finishes a long run); a failing run stops the
    others and raises; SIGINT or SIGTERM ends the workers at once."""
    yield from _execute(run, list(points), jobs, None, progress, desc)


class Batch:
    """Groups of configurations (each figure's points, say) run as one batch on one pool:
    a configuration that several groups hold (equal by :func:`run_key`) runs once, and
    every core stays busy until the last run of the last group, where a pool per group
    leaves cores idle at each group's end.

    ``groups``: full configurations (a domain's ``normalise``d points) per group.
    """

    def __init__(self, groups: Sequence[Sequence[Mapping[str, Any]]]) -> None:
        self.keys = [[run_key(config, 0) for config in group] for group in groups]
        self.configs: dict[str, Mapping[str, Any]] = {}
        self.groups_of: dict[str, list[int]] = {}
        for g, (group, keys) in enumerate(zip(groups, self.keys, strict=True)):
            for config, key in zip(group, keys, strict=True):
                self.configs.setdefault(key, config)
                if g not in self.groups_of.setdefault(key, []):
                    self.groups_of[key].append(g)

    def __len__(self) -> int:
        """The distinct runs."""
        return len(self.configs)

    def shared(self, group: int) -> int:
        """How many of the group's distinct runs another group holds too."""
        return sum(len(self.groups_of[k]) > 1 for k in set(self.keys[group]))

    def shared_text(self, group: int) -> str:
        """``"K shared with other figures, "`` for a report, ``""`` when none is."""
        shared = self.shared(group)
        return f"{shared} shared with other figures, " if shared else ""

    def run(
        self, run: RunFn, jobs: int | None = None,
        cost: Callable[[Mapping[str, Any]], float] | None = None, progress: bool = True,
    ) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """``(group, records in the group's order)`` for each group, the moment its last
        run finishes (so that a caller writes each group's results at once, and an
        interruption loses none that finished), running every distinct configuration once,
        on ``jobs`` processes (default: every core); ``cost(config)``: the expected work
        of a run, to start the longest first."""
        keys = list(self.configs)
        if cost is not None:
            work = {k: cost(self.configs[k]) for k in keys}
            keys.sort(key=lambda k: -work[k])  # stable: equal costs keep their order
        waiting = [len(set(group)) for group in self.keys]
        for g, count in enumerate(waiting):
            if count == 0:
                yield g, []
        done: dict[str, dict[str, Any]] = {}
        users = {key: len(groups) for key, groups in self.groups_of.items()}
        for i, record in run_each(run, [self.configs[k] for k in keys], jobs, progress):
            key = keys[i]
            done[key] = record
            for g in self.groups_of[key]:
                waiting[g] -= 1
                if waiting[g] == 0:
                    yield g, [done[k] for k in self.keys[g]]
                    for k in set(self.keys[g]):  # kept only while a group still needs it
                        users[k] -= 1
                        if users[k] == 0:
                            del done[k]


def to_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run; nested metrics flattened with dots; inf written as "inf"."""
    return pd.DataFrame([flatten(json_safe(dict(r))) for r in records])


# -- identity of a run ----------------------------------------------------------------------------
def replication_seed(base_seed: int, replication: int) -> int:
    """The seed of replication ``replication`` of a point seeded ``base_seed``.

    Derived through ``numpy.random.SeedSequence(base_seed, spawn_key=(replication,))``
    and folded to 63 bits (so it fits a signed 64-bit column).
    """
    if isinstance(base_seed, bool) or not isinstance(base_seed, (int, np.integer)) or base_seed < 0:
        raise ConfigError("seed", base_seed, "a non-negative integer")
    if replication < 0:
        raise ConfigError("replication", replication, "a non-negative integer")
    state = np.random.SeedSequence(int(base_seed), spawn_key=(int(replication),)).generate_state(
        1, np.uint64
    )
    return int(state[0] >> np.uint64(1))


def _canonical(value: Any) -> Any:
    """A JSON-ready form in which equal configurations look equal (1 == 1.0, inf == "inf")."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        f = float(value)
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        if math.isnan(f):  # (a value the checks that follow refuse, named: not a crash here)
            return "nan"
        return int(f) if f == int(f) and abs(f) < 2**53 else repr(f)
    return repr(value)


def run_key(config: Mapping[str, Any], replication: int, inputs: str = "") -> str:
    """A stable hash of a run's configuration and replication index (hex, 20 characters),
    and of ``inputs``, the digest of the files the run reads besides its configuration
    (the domain's ``inputs(config)``; ``""``: none, and the key is the configuration's)."""
    key: dict[str, Any] = {"config": _canonical(config), "replication": int(replication)}
    if inputs:
        key["inputs"] = inputs
    text = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Task:
    """One run of a sweep: a point, one of its replications, and the exact configuration."""

    index: int  # position of the point in the sweep
    replication: int
    base_seed: int
    config: dict[str, Any]  # what the run function receives (seed already derived)
    key: str


def make_tasks(
    configs: Sequence[Mapping[str, Any]],
    replications: Sequence[int] | int,
    seed_field: str = "seed",
    inputs: Callable[[Mapping[str, Any]], str] | None = None,
) -> list[Task]:
    """Tasks for each config and each of its replications, point-major; ``inputs(config)``
    (the domain's) digests the files a config's runs read, for their keys."""
    counts = [replications] * len(configs) if isinstance(replications, int) else replications
    tasks = []
    for index, (config, count) in enumerate(zip(configs, counts, strict=True)):
        if seed_field not in config:
            raise ConfigError(seed_field, None, "a seed in every point (runs are always seeded)")
        base_seed = config[seed_field]
        read = inputs(config) if inputs is not None else ""
        for r in range(count):
            seeded = dict(config)
            seeded[seed_field] = replication_seed(base_seed, r)
            tasks.append(Task(index, r, int(base_seed), seeded, run_key(seeded, r, read)))
    return tasks


def make_row(task: Task, record: Mapping[str, Any]) -> dict[str, Any]:
    """The tidy row of one finished run (see the module docstring for the columns)."""
    row: dict[str, Any] = {
        "run_key": task.key,
        "replication": task.replication,
        "base_seed": task.base_seed,
    }
    row.update(flatten(task.config))
    row.update(flatten(record))
    return row


def deterministic(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the ``sim_*`` columns (simulator speed, which varies run to run)."""
    return frame[[c for c in frame.columns if not str(c).startswith(SIMULATOR_PREFIX)]]


# -- where runs execute -------------------------------------------------------------------------
def _call(run: RunFn, point: Mapping[str, Any]) -> dict[str, Any]:
    return run(point)


def _execute(
    run: RunFn,
    points: list[Mapping[str, Any]],
    jobs: int | None,
    scheduler: Any,
    progress: bool | tqdm,
    desc: str,
    keys: Sequence[str] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(index, run(points[index]))`` as runs finish, serially, on a process
    pool, or on a Dask cluster.  A failing run stops the others and raises."""
    bar = progress if isinstance(progress, tqdm) else _bar(len(points), 0, progress, desc)
    try:
        if scheduler is not None:
            yield from _execute_dask(run, points, scheduler, bar, keys)
            return
        jobs = default_jobs() if jobs is None else jobs
        if jobs < 1:
            raise ConfigError("jobs", jobs, "an integer >= 1")
        if jobs == 1 or len(points) <= 1:
            for i, point in enumerate(points):
                record = run(point)
                bar.update()
                yield i, record
            return
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(points)), initializer=_worker_signals)
        try:
            pending: dict[Future[dict[str, Any]], int] = {
                pool.submit(_call, run, p): i for i, p in enumerate(points)
            }
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=pending.__getitem__):
                    i = pending.pop(future)
                    record = future.result()
                    bar.update()
                    yield i, record
        except BaseException as exc:
            if not isinstance(exc, Exception):  # SIGINT or SIGTERM: do not wait for runs
                _terminate_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        if not isinstance(progress, tqdm):
            bar.close()


#: how often a worker process looks whether its parent (the sweep) still lives (s)
PARENT_POLL_S = 0.5


def _worker_signals() -> None:
    """In a worker process: SIGINT (a terminal's ^C reaches the whole process group) is
    left to the parent, which ends the workers; SIGTERM ends a worker at once; and a
    worker whose parent is gone (killed with SIGKILL, which no handler sees) ends
    itself within :data:`PARENT_POLL_S`, on every platform: a thread watches for its
    reparenting.  (Linux's parent-death signal is not used: it fires when the *thread*
    that started the worker ends, which in a process pool may be a helper thread.)"""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)  # the sweep is gone: nothing would read this worker's result

    threading.Thread(target=watch, name="acceptsim-parent-watch", daemon=True).start()


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """End a pool's workers now, running runs and all (their runs are simply not kept)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()


def _execute_dask(
    run: RunFn,
    points: list[Mapping[str, Any]],
    scheduler: Any,
    bar: tqdm,
    keys: Sequence[str] | None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        distributed = importlib.import_module("distributed")
    except ImportError:
        raise ConfigError(
            "scheduler", scheduler, "needs dask[distributed]: pip install 'acceptsim[dask]'"
        ) from None
    own = isinstance(scheduler, str)
    if own:
        try:
            client = distributed.Client(scheduler, timeout="10s")
        except OSError as exc:
            raise ConfigError(
                "scheduler", scheduler, f"a reachable Dask scheduler ({exc})"
            ) from None
    else:
        client = scheduler  # a distributed.Client the caller manages
    futures = []
    try:
        index = {}
        for i, point in enumerate(points):
            key = f"sim-run-{keys[i]}" if keys is not None else None
            future = client.submit(_call, run, point, key=key, pure=False)
            index[future.key] = i
            futures.append(future)
        for future in distributed.as_completed(futures):
            record = future.result()
            bar.update()
            yield index[future.key], record
    finally:
        for future in futures:
            future.cancel()
        if own:
            client.close()


def _bar(total: int, initial: int, progress: bool, desc: str) -> Any:
    # a widget in a kernel, a bar on a terminal, nothing otherwise (acceptsim.sim.bars)
    return bars.bar(
        progress, total=total, initial=initial, unit="run", desc=desc, leave=False,
        dynamic_ncols=True,
    )  # fmt: skip


# -- storage -------------------------------------------------------------------------------------
#: the Parquet metadata key of a part: the run key and the identity of the sweep it is of
PART_KEY = b"sim.sweep.part"


class Parts:
    """A directory of finished runs, one single-row Parquet file per run key, each written
    atomically (a temporary file named for the writing process, then a rename).  Each
    part proves what it is: its metadata holds its run key and the identity of the sweep
    it was written for (``owner``), and a part that does not (corrupt, from another
    sweep, copied under another name) is set aside and its run made again."""

    def __init__(self, path: Path, owner: str = "") -> None:
        self.parts = path
        self.owner = owner
        #: the parts set aside by :meth:`load`, as (file, reason)
        self.rejected: list[tuple[Path, str]] = []

    def part(self, key: str) -> Path:
        return self.parts / f"{key}.parquet"

    def load(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored rows among ``keys`` that prove to be theirs."""
        import pyarrow.parquet as pq

        rows = {}
        for key in keys:
            path = self.part(key)
            if not path.exists():
                continue
            try:
                table = pq.read_table(path)
                meta = json.loads((table.schema.metadata or {}).get(PART_KEY, b"{}"))
                row = table.to_pylist()[0]
            except Exception as exc:  # noqa: BLE001 (any unreadable file: set aside)
                self._reject(path, f"unreadable ({type(exc).__name__})")
                continue
            if row.get("run_key") != key or meta.get("run_key", key) != key:
                self._reject(path, "its run key is another run's")
            elif self.owner and meta and meta.get("sweep") != self.owner:  # (none: an older
                # version's part, whose row's own run key is all it has to prove itself)
                self._reject(path, "it was written by another sweep")
            else:
                rows[key] = row
        return rows

    def _reject(self, path: Path, reason: str) -> None:
        """Set ``path`` aside as ``NAME.rejected`` (``.rejected.2``, ... when an earlier
        one is there: none is overwritten)."""
        aside = path.with_name(path.name + ".rejected")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.rejected.{n}")
        os.replace(path, aside)
        self.rejected.append((aside, reason))

    def save(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Write one row atomically; return it as it reads back (so fresh and resumed
        rows are the very same values)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([dict(row)])
        meta = dict(table.schema.metadata or {})
        meta[PART_KEY] = json.dumps({"run_key": row["run_key"], "sweep": self.owner}).encode()
        table = table.replace_schema_metadata(meta)
        final = self.part(row["run_key"])
        tmp = self.parts / f".{row['run_key']}.{os.getpid()}.tmp"
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, final)
        except OSError as exc:  # a full disk: name the file; the parts written are kept
            tmp.unlink(missing_ok=True)
            raise ConfigError("out", str(final), f"a file that can be written "
                              f"({exc.strerror or type(exc).__name__})") from None
        return table.to_pylist()[0]


#: the file of a sweep directory that its owner holds locked for the sweep's life
LOCK_FILE = ".lock"


class Store(Parts):
    """A sweep's directory: one Parquet part per finished run, plus the combined table.

    A directory has one owner: the sweep that made the Store holds an advisory lock on
    ``OUT/.lock`` (with its pid, host and start written in it) until :meth:`close` or
    its process ends, and a second sweep or resume on the same directory is refused
    with one line naming the holder.  Only the owner cleans the directory's temporary
    files."""

    def __init__(self, path: str | Path, resume: bool, owner: str = "") -> None:
        from acceptsim.sim.files import check_utf8_path

        check_utf8_path("out", path)  # before the first run, not when writing its part
        self.path = Path(path)
        super().__init__(self.path / "parts", owner)
        finished = [name for name in ("results.parquet", "manifest.json", "summary.csv")
                    if (self.path / name).exists()]
        if not resume and (finished or (self.parts.is_dir()
                                        and any(self.parts.glob("*.parquet")))):
            held = f" (it holds {', '.join(finished)})" if finished else ""
            raise ConfigError(
                "out", str(self.path), f"a new or empty directory, or resume to continue the "
                f"sweep stored there{held}",
            )  # fmt: skip
        try:
            self.parts.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                "out", str(self.path), f"a directory that can be created and written "
                f"({exc.strerror or type(exc).__name__})",
            ) from None  # fmt: skip
        self._lock = self._acquire()
        for stale in self.parts.glob(".*.tmp"):  # a write cut short by a kill (ours to clean)
            stale.unlink(missing_ok=True)

    def _acquire(self) -> Any:
        import fcntl

        lock = open(self.path / LOCK_FILE, "a+")  # noqa: SIM115 (held for the sweep's life)
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            lock.close()
            raise ConfigError(
                "out", str(self.path), f"a directory no other sweep is using (held by {holder}): "
                "wait for that sweep, or use another directory",
            ) from None  # fmt: skip
        lock.seek(0)
        before = lock.read().strip()
        if before:  # its holder ended without releasing it (killed): say so, take it over
            sys.stderr.write(f"{self.path}: taking over the lock left by {before}\n")
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()} on {platform.node()} since "
                   f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")  # fmt: skip
        lock.flush()
        return lock

    def close(self) -> None:
        """Release the directory (emptying the lock file: no holder left behind)."""
        import fcntl

        if self._lock is not None and not self._lock.closed:
            self._lock.seek(0)
            self._lock.truncate()
            self._lock.flush()
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()

    def read_manifest(self) -> dict[str, Any] | None:
        path = self.path / "manifest.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def write_manifest(self, description: Mapping[str, Any]) -> None:
        tmp = self.path / f".manifest.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(json_safe(dict(description)), indent=2, default=str) + "\n")
        os.replace(tmp, self.path / "manifest.json")

    def write_results(self, frame: pd.DataFrame, description: Mapping[str, Any]) -> Path:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[METADATA_KEY] = json.dumps(json_safe(dict(description)), default=str).encode()
        table = table.replace_schema_metadata(meta)
        final = self.path / "results.parquet"
        tmp = self.path / f".results.parquet.{os.getpid()}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, final)
        return final


#: the environment variable that sets the run cache: a directory, or ``off``
CACHE_ENV = "ACCEPTSIM_CACHE"
#: the values of :data:`CACHE_ENV` (and of ``cache=``) that turn the cache off
CACHE_OFF = ("off", "0", "no", "false")


def default_cache_dir() -> Path:
    """Where finished runs are cached by default: ``$XDG_CACHE_HOME/acceptsim/runs``
    (``~/.cache/acceptsim/runs``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "acceptsim" / "runs"


def _python_sources(root: Path) -> Iterator[Path]:
    """Every ``.py`` file below ``root``, in a fixed order, through the checkout's links
    (``acceptsim/sim`` and ``acceptsim/models`` link to the top-level folders)."""
    for folder, subfolders, files in os.walk(root, followlinks=True):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def code_digest(run: Callable[..., Any]) -> str:
    """What a cached run's result depends on besides its configuration: the run
    function (its name, and its source where Python has it), every Python source of the
    ``acceptsim`` package and of the package the run function belongs to (or its own
    file), and the interpreter's version.  Any edit of them gives another digest, so a
    cache never serves a result of other code."""
    import inspect

    digest = hashlib.sha256()
    module_name = getattr(run, "__module__", "") or ""
    digest.update(f"{sys.version}\0{module_name}\0"
                  f"{getattr(run, '__qualname__', repr(run))}\0".encode())  # fmt: skip
    try:
        digest.update(inspect.getsource(run).encode())
    except (OSError, TypeError):  # a built-in or a function typed at a bare prompt
        pass
    package = importlib.import_module("acceptsim")
    files = list(_python_sources(Path(package.__file__ or "").parent))
    top = sys.modules.get(module_name.split(".")[0])
    if top is not None and top is not package:
        if getattr(top, "__path__", None):  # a package of the user's: all its sources
            for folder in top.__path__:
                files += _python_sources(Path(folder))
        elif getattr(top, "__file__", None):  # one module (a script): its file
            files.append(Path(top.__file__))
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def open_cache(cache: bool | str | Path | None, run: Callable[..., Any]) -> Parts | None:
    """The run cache a sweep reads and writes: ``cache`` True (the default directory,
    :func:`default_cache_dir`), a directory, or False/``"off"``; None reads
    :data:`CACHE_ENV` (unset: the default directory).  Runs are kept under the
    :func:`code_digest` of the code that made them, by their run key."""
    if cache is None:
        cache = os.environ.get(CACHE_ENV, "") or True
    if cache is False or (isinstance(cache, str) and cache.strip().lower() in CACHE_OFF):
        return None
    root = default_cache_dir() if cache is True else Path(cache)
    path = root / code_digest(run)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            "cache", str(root), f"a directory that can be created and written "
            f"({exc.strerror or type(exc).__name__}), or cache=False",
        ) from None  # fmt: skip
    return Parts(path)


def read_results(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A stored sweep's table and description (``path`` is the directory or the file)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        path = path / "results.parquet"
    table = pq.read_table(path)
    meta = (table.schema.metadata or {}).get(METADATA_KEY)
    description = json.loads(meta) if meta else {}
    frame = table.to_pandas()
    if description:
        frame.attrs["sweep"] = description  # what summary() groups by
    return frame, description


def versions(*functions: Callable[..., Any]) -> dict[str, str]:
    """Installed versions of the distributions providing acceptsim and the given functions."""
    from importlib import metadata

    packages = {"acceptsim"}
    packages |= {f.__module__.split(".")[0] for f in functions if hasattr(f, "__module__")}
    dists = metadata.packages_distributions()
    out = {"python": platform.python_version()}
    for package in sorted(packages):
        for dist in dists.get(package, []):
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
    for lib in ("numpy", "pandas", "simpy"):
        try:
            out[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            pass
    return out


# -- the experiment level ---------------------------------------------------------------------
def _default_domain() -> Any:
    """The web-server domain's run functions, imported only when a sweep needs them."""
    return importlib.import_module("acceptsim.models.runner")


def without_ignored(
    points: Sequence[dict[str, Any]],
    ignored: Callable[[Mapping[str, Any]], set[str]],
    base: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The points with the fields their run does not read (``ignored(point)``, the
    domain's) set back to the base's value, each distinct point once, in order: a
    dimension a run ignores is not crossed with it (no duplicated runs, no duplicated
    pairs in a comparison)."""
    out, seen = [], set()
    for point in points:
        drop = ignored(point) & point.keys()
        if drop:
            point = {k: v for k, v in point.items() if k not in drop or k in base}
            point.update({k: base[k] for k in drop if k in base})
        key = json.dumps(_canonical(point), sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(point)
    return out


def resolve(
    scenario: str | Path | Scenario | Sequence[Mapping[str, Any]],
    overrides: Mapping[str, Any] | None = None,
    sweep_overrides: Mapping[str, list[Any]] | None = None,
    domain: Any = None,
    runs_per_point: int = 1,
    force: bool = False,
) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """The name, the points and the description of what is swept.  A scenario whose run
    count (the product of its lists' lengths x ``runs_per_point``) exceeds
    :data:`MAX_RUNS` is refused before its points are made, unless ``force``."""
    if isinstance(scenario, (str, Path)):
        if names_a_file(scenario):
            scenario = load_scenario(scenario)
        else:
            domain = domain if domain is not None else _default_domain()
            scenario = domain.load_scenario(str(scenario))
    if isinstance(scenario, Scenario):
        spec_sweep = {k: list(v) for k, v in scenario.sweep.items()}
        spec_sweep.update({k: list(v) for k, v in (sweep_overrides or {}).items()})
        for key, values in spec_sweep.items():
            check_sweep_values(f"sweep.{key}", key, values)
        for key, value in (overrides or {}).items():
            if key in spec_sweep:
                raise ConfigError(
                    key, value, f"not a base override: the scenario sweeps {key}; replace its "
                    "list instead (sweep_overrides / --vary)",
                )  # fmt: skip
        base = {**scenario.base, **(overrides or {})}
        resolved = Scenario(**{**scenario.__dict__, "base": base, "sweep": spec_sweep})
        if not force and resolved.count() * runs_per_point > MAX_RUNS:  # before expanding
            raise ConfigError(
                "points x replications", resolved.count() * runs_per_point,
                f"at most {MAX_RUNS:,} runs per sweep ({resolved.count():,} points: "
                + " x ".join(str(len(v)) for v in spec_sweep.values())
                + f", x {runs_per_point:,} replications); sweep fewer points or replications, "
                "or --force (force=True from Python) runs it anyway",
            )  # fmt: skip
        spec = {"scenario": scenario.name, "base": base, "sweep": spec_sweep}
        if scenario.path is not None:
            spec["file"] = str(scenario.path)
        points = resolved.points()
        ignored = getattr(domain, "ignored_fields", None)
        kept = points if ignored is None else without_ignored(points, ignored, base)
        if len(kept) < len(points):  # said, not silent: the description keeps the count
            spec["points_merged"] = len(points) - len(kept)
        return scenario.name, kept, spec
    if sweep_overrides:
        raise ConfigError("sweep_overrides", sweep_overrides, "only with a scenario, not points")
    points = [{**p, **(overrides or {})} for p in scenario]
    return "points", points, {"points": points}


def sweep(
    scenario: str | Path | Scenario | Sequence[Mapping[str, Any]],
    *,
    run: RunFn | None = None,
    normalise: NormaliseFn | None = None,
    replications: int | None = None,
    jobs: int | None = None,
    scheduler: Any = None,
    out: str | Path | None = None,
    resume: bool = False,
    overrides: Mapping[str, Any] | None = None,
    sweep_overrides: Mapping[str, list[Any]] | None = None,
    stop: StoppingRule | None = None,
    seed_field: str = "seed",
    progress: bool = True,
    check: CheckFn | None = None,
    force: bool = False,
    cache: bool | str | Path | None = None,
) -> pd.DataFrame:
    """Run every point of ``scenario`` ``replications`` times; one row per run.

    ``scenario``
        a scenario name (resolved by the domain), a TOML file, a
        :class:`~acceptsim.sim.scenario.Scenario`, or a list of points (configuration dicts).
    ``run``, ``normalise``
        the run function (point -> result record; must be picklable, i.e. a
        module-level function, for ``jobs > 1`` or a cluster) and the function
        that validates a point and fills in its defaults.  Default: the
        domain's (``models.runner.run_point`` / ``normalise``).
    ``jobs``, ``scheduler``
        local processes (default: every core; 1 runs in this process), or a
        Dask scheduler address or ``distributed.Client`` (then ``jobs`` is ignored).
    ``out``, ``resume``
        directory to write runs to as they finish (one sweep at a time: a second one
        on it is refused, naming the holder); ``resume=True`` continues the sweep
        stored there exactly as its manifest describes it (its points, replications
        and stopping rule), running only the runs it lacks; an argument that
        contradicts the manifest is refused, one left out is taken from it, and a
        stored part that is not the sweep's own (corrupt, or from another sweep) is
        set aside (``*.rejected``) and its run made again.
    ``overrides``, ``sweep_overrides``
        base fields to change (e.g. ``{"duration_s": 5}``) and swept lists to
        replace (e.g. ``{"rate_per_s": [20000, 24000]}``).
    ``stop``
        a :class:`~acceptsim.sim.stats.StoppingRule`: after the first ``replications``
        (at least its minimum), add replications to each configuration until
        its metric's relative CI half-width is under the target.
    ``check``, ``force``
        ``check(config, force)`` raises :class:`~acceptsim.sim.errors.ConfigError` for a
        run whose expected work is beyond its bound (default: the domain's
        ``check_work``); a sweep of more than :data:`MAX_RUNS` runs is refused too.
        ``force=True`` lifts both.
    ``cache``
        finished runs are kept in a cache (default ``~/.cache/acceptsim/runs``; the
        environment variable ``ACCEPTSIM_CACHE`` sets another directory, or ``off``)
        under the digest of the code that made them (:func:`code_digest`), and a run
        found there is not run again: a notebook cell run twice costs only what
        changed.  ``cache=False`` (or ``"off"``) neither reads nor writes it; a
        directory uses that one.

    All points are validated (``normalise``, ``check``) before anything runs.  The
    returned frame has ``attrs["sweep"]`` with the description also stored
    with the results, including ``config_columns`` and ``varied`` (the
    configuration columns that differ between points).
    """
    if run is None or normalise is None:
        domain = _default_domain()
        run = run if run is not None else domain.run_point
        normalise = normalise if normalise is not None else domain.normalise
        check = check if check is not None else getattr(domain, "check_work", None)
    else:
        domain = None
    if replications is not None and (
        isinstance(replications, bool) or not isinstance(replications, int) or replications < 1
    ):
        raise ConfigError("replications", replications, "an integer >= 1")
    most = max(replications or 1, stop.max_replications if stop else 1)
    name, points, spec = resolve(scenario, overrides, sweep_overrides, domain, most, force)
    try:
        configs = [normalise(p) for p in points]  # validate everything up front
    except ConfigError as exc:  # a bad value of a scenario's: say which scenario
        raise in_file(spec.get("file", name), exc) from None
    if out is not None and resume:
        replications, stop, configs = _resumed(
            Path(out), name, configs, replications, stop,
            explicit=bool(overrides or sweep_overrides),
        )  # fmt: skip
    replications = 1 if replications is None else replications
    config_columns = list(dict.fromkeys(c for cfg in configs for c in flatten(cfg)))
    flat = [flatten(cfg) for cfg in configs]
    varied = [
        c for c in config_columns
        if c != seed_field and len({json.dumps(_canonical(f.get(c))) for f in flat}) > 1
    ]  # fmt: skip
    counts = [max(replications, stop.min_replications if stop else 1)] * len(configs)
    check_size(configs, counts, stop, check, force)
    if spec.get("points_merged") and progress:
        sys.stderr.write(f"{name}: {spec['points_merged']} of the sweep's combinations differ "
                         "only in a field their run does not read (a policy that sets its own "
                         "accept limit ignores accept_limit): each is run once\n")
    identity = _identity(name, configs, replications, stop)
    description = {
        "name": name,
        **spec,
        "replications": replications,
        "stop": stop.__dict__ if stop else None,
        "config_columns": config_columns,
        "varied": varied,
        "identity": identity,
        "configs": configs,
        "versions": versions(run),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(sys.argv),
    }
    store = Store(out, resume, owner=identity["sweep"]) if out is not None else None
    try:
        measures = getattr(domain, "is_measure", None) if domain is not None else None
        # the files a run reads: told by the module that validates the points (the
        # domain's runner, or the module of a normalise function given)
        inputs = getattr(domain or sys.modules.get(getattr(normalise, "__module__", "")),
                         "inputs", None)
        return _run_sweep(run, configs, counts, seed_field, stop, store, cache, jobs,
                          scheduler, progress, name, description, measures,
                          inputs)  # fmt: skip
    finally:
        if store is not None:
            store.close()


def _identity(
    name: str, configs: Sequence[Mapping[str, Any]], replications: int,
    stop: StoppingRule | None,
) -> dict[str, Any]:  # fmt: skip
    """What a sweep is: its name, the digest of its configurations, its replications and
    its stopping rule; ``sweep``, the digest of them all, marks its parts."""
    text = json.dumps([_canonical(dict(c)) for c in configs], sort_keys=True, default=str)
    identity = {
        "name": name,
        "configs": hashlib.sha256(text.encode()).hexdigest()[:16],
        "replications": replications,
        "stop": json_safe(stop.__dict__) if stop else None,
    }
    whole = json.dumps(identity, sort_keys=True, default=str)
    return {**identity, "sweep": hashlib.sha256(whole.encode()).hexdigest()[:16]}


def stored_identity(path: Path, manifest: Any) -> dict[str, Any] | None:
    """The identity a sweep's ``manifest.json`` stores (what a resume compares with and
    continues: the scenario's name, the replications, the stopping rule, the points'
    digest), checked to be of the types a sweep writes: a hand-edited one is refused with
    one line naming the field, before any run.  None for a manifest written before
    sweeps had an identity."""
    if not isinstance(manifest, dict):
        raise ConfigError(str(path), type(manifest).__name__, "a JSON object, as a sweep "
                          "writes it (edited?)")
    identity = manifest.get("identity")
    if not identity:
        return None
    field = f"{path}: identity"
    if not isinstance(identity, dict):
        raise ConfigError(field, identity, "a table of name, configs, replications and stop")
    replications = identity.get("replications")
    checks = [
        ("name", isinstance(identity.get("name"), str), "the scenario's name (text)"),
        ("configs", isinstance(identity.get("configs"), str), "the points' digest (text)"),
        ("replications", isinstance(replications, int) and not isinstance(replications, bool)
         and replications >= 1, "an integer >= 1"),
        ("stop", identity.get("stop") is None or isinstance(identity.get("stop"), dict),
         "null or a stopping rule's table"),
    ]  # fmt: skip
    for key, ok, allowed in checks:
        if not ok:
            raise ConfigError(f"{field}.{key}", identity.get(key), allowed + " (edited?)")
    stop = identity.get("stop")
    if stop:
        names = {f.name for f in dataclasses.fields(StoppingRule)}
        if set(stop) - names or "metric" not in stop:
            raise ConfigError(f"{field}.stop", stop, "a stopping rule's table: "
                              + ", ".join(sorted(names)) + " (edited?)")
        try:
            StoppingRule(**stop)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{field}.stop", stop, f"a valid stopping rule ({exc})") from None
    return identity


def _resumed(
    out: Path, name: str, configs: list[dict[str, Any]], replications: int | None,
    stop: StoppingRule | None, explicit: bool,
) -> tuple[int | None, StoppingRule | None, list[dict[str, Any]]]:  # fmt: skip
    """The replications, stopping rule and configurations a resume continues with: the
    stored sweep's, where this call leaves them out; a ConfigError where it contradicts
    them (another scenario, other replications, another stopping rule, changed points)."""
    path = out / "manifest.json"
    if not path.exists() and not path.is_symlink():
        return replications, stop, configs  # nothing stored yet: a new sweep
    text = read_user_file("resume", path, "the sweep's manifest (a JSON file)")
    try:
        manifest = json.loads(text)
    except ValueError:
        raise ConfigError(str(path), "not JSON", "the manifest.json a sweep writes, to "
                          f"resume it (edited?); or use another directory than {out}") from None
    stored = stored_identity(path, manifest)
    if stored is None:  # written before sweeps had an identity: continue as asked
        return replications, stop, configs

    def refuse(field: str, value: Any, was: Any) -> ConfigError:
        return ConfigError(
            field, value, f"the stored sweep's own ({was!r}) to resume it; leave it out, "
            f"or use another directory than {out}",
        )  # fmt: skip

    if stored["name"] != name:
        raise refuse("scenario", name, stored["name"])
    if replications is None:
        replications = int(stored["replications"])
    elif replications != stored["replications"]:
        raise refuse("replications", replications, stored["replications"])
    if stop is None and stored.get("stop"):
        stop = StoppingRule(**stored["stop"])
    elif stop is not None and json_safe(stop.__dict__) != stored.get("stop"):
        raise refuse("stop", stop.__dict__, stored.get("stop"))
    if _identity(name, configs, replications, stop)["configs"] != stored["configs"]:
        if explicit or "configs" not in manifest:
            raise refuse("points", "the overrides given", "its points")
        configs = [dict(c) for c in manifest["configs"]]  # defaults moved since: keep its own
    return replications, stop, configs


def _run_sweep(
    run: RunFn, configs: list[dict[str, Any]], counts: list[int], seed_field: str,
    stop: StoppingRule | None, store: Store | None, cache: Any, jobs: int | None,
    scheduler: Any, progress: bool, name: str, description: dict[str, Any],
    measures: Callable[[str], bool] | None = None,
    inputs: Callable[[Mapping[str, Any]], str] | None = None,
) -> pd.DataFrame:  # fmt: skip
    cached = open_cache(cache, run)
    description["cache"] = str(cached.parts) if cached is not None else None
    if store is not None:
        store.write_manifest(description)
    rows: dict[str, dict[str, Any]] = {}
    while True:
        tasks = make_tasks(configs, counts, seed_field, inputs)
        if store is not None:
            rows.update(store.load(t.key for t in tasks if t.key not in rows))
            for path, reason in store.rejected:
                sys.stderr.write(f"{path}: set aside ({reason}); its run is made again\n")
            store.rejected.clear()
        if cached is not None:  # finished before, by the very same code
            for key, row in cached.load(t.key for t in tasks if t.key not in rows).items():
                rows[key] = store.save(row) if store is not None else row
        missing = [t for t in tasks if t.key not in rows]
        bar = _bar(len(tasks), len(tasks) - len(missing), progress, name)
        try:
            results = _execute(
                run, [t.config for t in missing], jobs, scheduler, bar, name,
                keys=[t.key for t in missing],
            )  # fmt: skip
            for i, record in results:
                row = make_row(missing[i], record)
                saved = store.save(row) if store is not None else row
                if cached is not None:
                    from_cache = cached.save(saved)
                    if store is None:  # as it reads back, like a row found in the cache
                        saved = from_cache
                rows[row["run_key"]] = saved
        finally:
            bar.close()
        frame = pd.DataFrame([rows[t.key] for t in tasks])
        if stop is None:
            break
        if stop.metric not in frame.columns:
            raise ConfigError("metric", stop.metric, "a column of the run records")
        new_counts = [
            stop.replications_needed(
                pd.to_numeric(group[stop.metric], errors="coerce").to_numpy(dtype=float)
            )
            for _, group in frame.groupby(_point_index(tasks), sort=True)
        ]
        if new_counts == counts:
            break
        counts = new_counts
    if measures is not None:  # the record's measures, as the domain names them
        description["metric_columns"] = [c for c in frame.columns if measures(str(c))]
    description["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    description["runs"] = len(frame)
    if store is not None:
        store.write_manifest(description)
        store.write_results(frame, description)
    frame.attrs["sweep"] = json_safe(description)
    return frame


def check_size(
    configs: Sequence[Mapping[str, Any]],
    counts: Sequence[int],
    stop: StoppingRule | None,
    check: CheckFn | None,
    force: bool,
) -> int:
    """The most runs the sweep can make; :class:`~acceptsim.sim.errors.ConfigError` beyond
    :data:`MAX_RUNS`, or if ``check`` refuses one configuration, unless ``force``."""
    most = [max(c, stop.max_replications) if stop else c for c in counts]
    runs = sum(most)
    if not force and runs > MAX_RUNS:
        what = f"{len(configs):,} points x {max(most):,} replications" + (
            " (the stopping rule's maximum)" if stop else ""
        )
        raise ConfigError(
            "points x replications", runs,
            f"at most {MAX_RUNS:,} runs per sweep ({what}); sweep fewer points or "
            "replications, or --force (force=True from Python) runs it anyway",
        )  # fmt: skip
    if check is not None:
        for config in configs:
            check(config, force)
    return runs


def _point_index(tasks: Sequence[Task]) -> np.ndarray:
    return np.array([t.index for t in tasks])


def summary(
    frame: pd.DataFrame | str | Path, metrics: Sequence[str] | None = None
) -> pd.DataFrame:
    """Mean and 95 % CI over replications for every configuration of a sweep.

    ``frame``: a sweep's frame (as :func:`sweep` or :func:`read_results` return it, with
    the sweep's description in ``attrs["sweep"]``), or the path of a stored sweep (its
    directory or results file).  Configurations are told apart by the sweep's
    ``varied`` columns; ``metrics`` defaults to every numeric column of the run records.
    A frame without the description (``pd.read_parquet`` loses it) is refused: without
    it every row would be taken for a replication of one configuration.
    """
    if isinstance(frame, (str, Path)):
        frame = read_results(frame)[0]
    description = frame.attrs.get("sweep")
    if not description or "varied" not in description:
        raise ConfigError(
            "frame", f"a frame of {len(frame)} rows without a sweep description",
            "a sweep's frame as sweep() or read_results(OUT) return it (they keep its "
            "description in frame.attrs['sweep']; pd.read_parquet does not), or the path "
            "of the stored sweep",
        )  # fmt: skip
    by = list(description.get("varied", []))
    if metrics is None and description.get("metric_columns"):  # the domain's measures
        metrics = [c for c in description["metric_columns"] if c in frame.columns
                   and pd.api.types.is_numeric_dtype(frame[c])
                   and not pd.api.types.is_bool_dtype(frame[c])]  # fmt: skip
    if metrics is None:
        skip = set(META_COLUMNS) | set(description.get("config_columns", []))
        metrics = [
            c for c in frame.columns
            if c not in skip and not str(c).startswith(SIMULATOR_PREFIX)
            and pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
        ]  # fmt: skip
    return summarise(frame, by, metrics)


class _CallableModule(types.ModuleType):
    """This module, callable: ``sim.sweep(...)`` is :func:`sweep` and ``sim.sweep.run_many``
    etc. are its helpers, however and in whatever order they were imported."""

    def __call__(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
