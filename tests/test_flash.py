"""Flash architectures, the file cache, the disk and the file-set workload."""

from __future__ import annotations

import pytest

from acceptsim.models import RunConfig, simulate
from acceptsim.models.filecache import Disk, DiskParams, FileCache, Storage
from acceptsim.models.fileset import FileSet, FileSetParams
from acceptsim.sim.engine import Environment
from acceptsim.sim.errors import ConfigError
from acceptsim.sim.streams import Streams

FLASH = ("flash-sped", "flash-amped", "flash-mp", "flash-mt")


def run(server: str, rate: float, dataset: float, cache: float = 100e6, **kw: object) -> dict:
    return simulate(
        server=server, rate_per_s=rate, workload="fileset",
        workload_params={"dataset_bytes": dataset}, server_params={"cache_bytes": cache},
        duration_s=kw.pop("duration_s", 3.0), warmup_s=kw.pop("warmup_s", 1.0), **kw,
    )


# -- the pieces ---------------------------------------------------------------------------
def test_the_cache_evicts_least_recently_used_files_within_its_budget() -> None:
    cache = FileCache(100)
    for f in range(4):
        cache.insert(f, 30)
    assert len(cache) == 3 and cache.used_bytes == 90 and 0 not in cache
    assert cache.lookup(1)  # 1 becomes most recently used
    cache.insert(9, 30)
    assert 2 not in cache and 1 in cache and cache.used_bytes <= 100
    cache.insert(10, 500)  # larger than the whole cache: not kept
    assert 10 not in cache and cache.used_bytes <= 100


def test_the_disk_serves_reads_one_after_another() -> None:
    env = Environment()
    disk = Disk(env, DiskParams(disk_access_s=0.01, disk_bytes_per_s=1e6))
    done: list[tuple[int, float]] = []
    for i in range(3):
        disk.read(10_000, lambda v: done.append((v, env.now)), i)
    env.run(until=1.0)
    assert [v for v, _ in done] == [0, 1, 2]
    assert [t for _, t in done] == pytest.approx([0.02, 0.04, 0.06])
    assert disk.busy_time == pytest.approx(0.06) and not disk.busy


def test_concurrent_misses_for_one_file_share_one_disk_read() -> None:
    env = Environment()
    storage = Storage(env, 1e6, DiskParams())
    got: list[int] = []
    for i in range(5):
        storage.fetch(7, 4096, got.append, i)
    env.run(until=1.0)
    assert got == [0, 1, 2, 3, 4]
    assert storage.disk.reads == 1 and storage.joined == 4 and 7 in storage.cache


def test_the_file_set_has_the_requested_size_and_a_stable_popularity_order() -> None:
    fs = FileSet(FileSetParams(dataset_bytes=100e6), Streams(3))
    assert fs.dataset_bytes == pytest.approx(100e6, rel=0.05)
    picks = [fs.reply_bytes() for _ in range(20000)]
    assert all(int(r) == fs.replies[r.file] for r in picks)
    top = {f for f, _ in fs.by_popularity[:50]}
    assert sum(r.file in top for r in picks) > 0.3 * len(picks)
    again = FileSet(FileSetParams(dataset_bytes=100e6), Streams(3))
    assert [again.reply_bytes().file for _ in range(100)] == [r.file for r in picks[:100]]


def test_bad_file_set_and_memory_settings_are_refused_before_any_run() -> None:
    with pytest.raises(ConfigError, match="class_mix"):
        RunConfig(workload="fileset", workload_params={"class_mix": "0.5,0.5"})
    with pytest.raises(ConfigError, match="workers"):
        RunConfig(server="flash-mp", server_params={"cache_bytes": 10e6, "workers": 50})


# -- whole runs -----------------------------------------------------------------------------
@pytest.mark.parametrize("server", FLASH)
def test_every_connection_ends_in_one_outcome(server: str) -> None:
    r = run(server, 6000, 400e6, duration_s=2.0, warmup_s=0.5)
    c = r["connections"]
    assert c["attempted"] == c["completed"] + c["timed_out"] + c["in_flight_at_end"]
    assert sum(r["cpu_share"].values()) == pytest.approx(1.0, abs=1e-9)
    assert 0 <= r["files"]["hit_ratio"] <= 1
    assert r["files"]["disk_busy_share"] <= 1.0 + 1e-6


@pytest.mark.parametrize("server", ["flash-amped", "flash-mp"])
def test_the_same_seed_gives_the_same_result(server: str) -> None:
    one, two = (run(server, 4000, 400e6, duration_s=1.5, warmup_s=0.5) for _ in range(2))
    for key in ("sim_cpu_time_s", "sim_conns_per_cpu_s"):
        one.pop(key), two.pop(key)
    assert one == two


def test_when_the_files_fit_in_memory_sped_and_amped_serve_alike() -> None:
    sped, amped = run("flash-sped", 8000, 50e6), run("flash-amped", 8000, 50e6)
    assert sped["files"]["disk_reads_per_s"] == 0
    assert sped["reply_rate_per_s"] == pytest.approx(amped["reply_rate_per_s"], rel=0.02)


def test_sped_stalls_on_misses_while_amped_keeps_serving_cached_requests() -> None:
    sped, amped = run("flash-sped", 12000, 400e6), run("flash-amped", 12000, 400e6)
    assert sped["reply_rate_per_s"] < 0.85 * amped["reply_rate_per_s"]
    assert sped["response_time_ms"]["mean"] > 2 * amped["response_time_ms"]["mean"]
    # SPED's process waits for every read: its CPU and the disk are never busy together
    sped_server = 1 - sped["cpu_share"]["idle"] - sped["cpu_share"]["kernel"]
    assert sped_server + sped["files"]["disk_busy_share"] <= 1.02
    # AMPED overlaps them
    amped_server = 1 - amped["cpu_share"]["idle"] - amped["cpu_share"]["kernel"]
    assert amped_server + amped["files"]["disk_busy_share"] > 1.2


def test_mp_processes_take_memory_from_the_file_cache() -> None:
    mp, mt = run("flash-mp", 4000, 400e6), run("flash-mt", 4000, 400e6)
    assert mp["files"]["cache_mb"] == pytest.approx(100 - 32 * 1.0)
    assert mt["files"]["cache_mb"] > mp["files"]["cache_mb"]
    assert mp["files"]["hit_ratio"] < mt["files"]["hit_ratio"]
