"""A host of several CPUs (acceptsim.models.multicore): the uniprocessor unchanged, the
closed forms of a shared queue (M/M/k) and of reuseport (k M/M/1), the invariants of
several workers, and the directions the kernel's and nginx's sources describe."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from acceptsim.models.config import RunConfig
from acceptsim.models.costs import HostCosts
from acceptsim.models.host import Host
from acceptsim.models.request_cost import RequestCostParams, factor_draws
from acceptsim.models.runner import run_point
from acceptsim.models.servers.registry import SERVERS
from acceptsim.sim.errors import ConfigError

#: every CPU cost (seconds, or seconds per unit) set to zero
ZERO = {row["name"]: 0.0 for row in HostCosts.describe() if row["unit"].startswith("s")}
#: the fields a host of several CPUs adds to the record, and the simulator's timings
ADDED = {"cpus", "listen", "wakeup", "softirq", "workers", "per_worker", "worker_imbalance",
         "kernel_share_per_cpu", "sim_cpu_time_s", "sim_conns_per_cpu_s"}
RTT_S = 1e-4  # the clients' round trip (ClientParams' default)
MU = 1000.0  # requests per second one worker serves (request_s = 1 ms)


# -- one worker on a host of several CPUs is the uniprocessor ----------------------------
@pytest.mark.parametrize("server", list(SERVERS))
def test_one_worker_on_two_cpus_with_the_kernel_on_cpu0_is_the_uniprocessor(server: str) -> None:
    """The multi-CPU event loop, given a second CPU with nothing on it, gives every
    measure of the uniprocessor's, to the last bit (the idle share has one CPU more)."""
    base = {"server": server, "rate_per_s": 24000.0, "duration_s": 1.0, "warmup_s": 0.25,
            "seed": 3}
    one = run_point(RunConfig.from_dict(base))
    two = run_point(RunConfig.from_dict({**base, "cpus": 2, "workers": 1, "softirq": "cpu0"}))
    for name, value in one.items():
        if name in ADDED:
            continue
        if name == "cpu_share":
            assert two[name]["idle"] == pytest.approx(value["idle"] + 1.0, abs=1e-9)
            assert {k: v for k, v in two[name].items() if k != "idle"} == {
                k: v for k, v in value.items() if k != "idle"}
            continue
        assert two[name] == value, name


# -- closed forms ---------------------------------------------------------------------------
def erlang_c(k: int, load: float) -> float:
    """The probability that an arrival waits in M/M/k with offered load ``load`` (Erlang C,
    through the Erlang B recursion)."""
    b = 1.0
    for n in range(1, k + 1):
        b = load * b / (n + load * b)
    return k * b / (k - load * (1.0 - b))


def mmk_sojourn_tail(k: int, lam: float, mu: float, t: float) -> float:
    """P(wait + service > t) in M/M/k, FIFO: no wait with probability 1 - C, else an
    exponential wait at rate k mu - lambda, plus an exponential service at rate mu."""
    c = erlang_c(k, lam / mu)
    theta = k * mu - lam
    both = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
    return (1.0 - c) * math.exp(-mu * t) + c * both


def prefork_run(k: int, rho: float, seed: int, listen: str = "shared") -> np.ndarray:
    """Sojourn times (response time minus the round trip) of a prefork server with k
    workers on k CPUs, every kernel and loop cost zero, exponential request costs of mean
    1/MU, Poisson arrivals at rho k MU, no queue limit in reach."""
    config = RunConfig.from_dict({
        "server": "prefork", "cpus": k, "listen": listen, "rate_per_s": rho * k * MU,
        "duration_s": 4.0, "warmup_s": 0.5, "seed": seed, "kernel": "linux-modern",
        "costs": {**ZERO, "request_s": 1.0 / MU},
        "server_params": {"request_cost": "exponential", "backlog": 4096},
    })
    host = Host(config)
    record = host.run()
    assert record["drops_per_s"]["total"] == 0
    return np.asarray(host.client.response_times) - RTT_S


def ci_half(values: np.ndarray, confidence: float = 0.99) -> float:
    return stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(
        len(values))


@pytest.mark.parametrize("k", [1, 4, 16])
def test_a_shared_socket_of_blocking_workers_is_mmk(k: int) -> None:
    """Mean sojourn and the tail beyond the closed form's 95th percentile-ish point, each
    within a 99% interval over replications; the interval is sharp enough to tell the
    shared queue from k separate ones (reuseport's closed form lies outside it)."""
    rho = 0.8
    lam = rho * k * MU
    runs = [prefork_run(k, rho, seed) for seed in range(1, 9)]
    means = np.array([r.mean() for r in runs])
    expected = 1.0 / MU + erlang_c(k, lam / MU) / (k * MU - lam)
    half = ci_half(means)
    assert abs(means.mean() - expected) <= half, (means.mean(), half, expected)
    t = 3.0 / MU
    beyond = np.array([(r > t).mean() for r in runs])
    tail = mmk_sojourn_tail(k, lam, MU, t)
    assert abs(beyond.mean() - tail) <= ci_half(beyond), (beyond.mean(), tail)
    if k > 1:  # k M/M/1 queues at a k-th of the rate wait far longer
        separate = 1.0 / (MU - lam / k)
        assert abs(means.mean() - separate) > half


def test_reuseport_with_blocking_workers_is_k_independent_mm1() -> None:
    """Each worker's own socket gets a k-th of the connections by the 4-tuple's hash: k
    M/M/1 queues at lambda / k, mean sojourn 1 / (mu - lambda / k)."""
    k, rho = 4, 0.8
    means = np.array([prefork_run(k, rho, seed, "reuseport").mean() for seed in range(1, 9)])
    expected = 1.0 / (MU - rho * MU)
    half = ci_half(means)
    assert abs(means.mean() - expected) <= half, (means.mean(), half, expected)
    shared = 1.0 / MU + erlang_c(k, rho * k) / (k * MU - rho * k * MU)
    assert abs(means.mean() - shared) > half


def test_request_cost_factors_have_mean_one_and_their_shape() -> None:
    gen = np.random.default_rng(5)
    n = 400_000
    for kind, extra in (("exponential", {}), ("lognormal", {"request_cost_sigma": 0.8}),
                        ("bimodal", {"request_cost_share": 0.2, "request_cost_ratio": 6.0})):
        draws = factor_draws(RequestCostParams(request_cost=kind, **extra))
        assert draws is not None
        x = draws(gen, n)
        assert x.mean() == pytest.approx(1.0, abs=4 * x.std() / math.sqrt(n)), kind
    x = factor_draws(RequestCostParams(request_cost="bimodal", request_cost_share=0.2,
                                       request_cost_ratio=6.0))(gen, n)
    assert set(np.unique(x).round(9)) == {round(1 / 2.0, 9), round(6 / 2.0, 9)}
    assert (x > 1).mean() == pytest.approx(0.2, abs=0.005)
    assert factor_draws(RequestCostParams()) is None  # constant: no draws at all


# -- invariants -------------------------------------------------------------------------------
@st.composite
def multicore_configs(draw: st.DrawFn) -> RunConfig:
    server = draw(st.sampled_from(["userver", "nginx", "prefork"]))
    spec = SERVERS[server]
    cpus = draw(st.integers(2, 5))
    listen = draw(st.sampled_from(["shared", "reuseport"]))
    # the accept mutex is refused beside reuseport sockets (nginx takes none for them)
    wakeups = [w for w in spec.wakeups if listen == "shared" or w != "mutex"]
    return RunConfig(
        server=server, cpus=cpus, workers=draw(st.integers(1, cpus)),
        listen=listen, wakeup=draw(st.sampled_from(wakeups)),
        softirq=draw(st.sampled_from(["rss", "cpu0"])),
        accept_limit=draw(st.sampled_from([1, 4, math.inf])),
        rate_per_s=draw(st.sampled_from([5000.0, 30000.0, 90000.0])),
        # (a backlog fills in milliseconds at these rates: 0.1 s of warm-up and 0.3 s of
        # window reach every state a longer run does, in two thirds of the time)
        duration_s=0.4, warmup_s=0.1, seed=draw(st.integers(0, 50)),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multicore_configs())
def test_workers_add_up_and_queues_stay_within_capacity(config: RunConfig) -> None:
    host = Host(config)
    record = host.run()
    workers = record["per_worker"]
    assert len(workers) == config.workers
    window = config.duration_s - config.warmup_s
    assert sum(w["accept_rate_per_s"] for w in workers) == pytest.approx(
        record["accept_rate_per_s"], rel=1e-9)
    # every reply a client received in time was written by a worker
    assert sum(w["replies_per_s"] for w in workers) * window >= (
        record["reply_rate_per_s"] * window - 1e-6) - _in_flight_allowance(config)
    for listen in host.listens:
        assert listen.max_accept_len <= listen.backlog + 1
        assert listen.max_syn_len <= listen.syn_capacity
    assert sum(record["cpu_share"].values()) == pytest.approx(config.cpus)
    for w in workers:
        assert 0.0 <= w["cpu_share"] <= 1.0 + 1e-9
    # every connection is held by one worker at most, the one that accepted it
    for i, worker in enumerate(host.workers):
        assert worker.worker == i and worker.cpu is host.cpus[i]
    assert record == Host(config).run() | {k: record[k] for k in
                                           ("sim_cpu_time_s", "sim_conns_per_cpu_s")}


def _in_flight_allowance(config: RunConfig) -> float:
    """Replies written just before the window and received in it (one round trip)."""
    return config.rate_per_s * 2 * RTT_S + 2


# -- the directions of the sources --------------------------------------------------------
_NGINX_RUNS: dict[str, dict] = {}


def nginx_run(**fields: object) -> dict:
    """The record of an nginx run on 4 CPUs; each configuration is run once (several
    tests compare the same runs; a record is deterministic, and no test changes one)."""
    base = {"server": "nginx", "cpus": 4, "duration_s": 2.0, "warmup_s": 0.5, "seed": 1}
    config = RunConfig.from_dict({**base, **fields})
    key = repr(sorted(config.to_dict().items()))
    if key not in _NGINX_RUNS:
        _NGINX_RUNS[key] = run_point(config)
    return _NGINX_RUNS[key]


#: 10,000/s on 4 workers for 1 s: the directions below are as wide at seeds 1-6 after 1 s
#: as after 2 s (the first worker's share 0.77 (> 0.7), the herd's 25 times the failed
#: accepts (> 5), the spread layouts' imbalance at most 1.05 (< 1.1))
MODERATE = {"rate_per_s": 10000.0, "duration_s": 1.0, "warmup_s": 0.25}


#: nginx before 1.21.6: the listening socket is never re-added to a worker's epoll set
NO_REORDER = {"reorder_accept_every": 0}


def test_exclusive_wakeup_concentrates_connections_on_the_first_registered_workers() -> None:
    """At moderate load the first worker in the wait queue is asleep when most connections
    come, so it takes most of them (nginx before 1.21.6); reuseport's hash spreads them
    evenly by count."""
    shared = nginx_run(**MODERATE, wakeup="exclusive", server_params=NO_REORDER)
    replies = [w["replies_per_s"] for w in shared["per_worker"]]
    assert replies == sorted(replies, reverse=True)
    assert replies[0] > 0.7 * sum(replies)
    assert shared["worker_imbalance"] > 2.5
    # waking every waiter spreads them more (whoever accepts first wins)
    herd = nginx_run(**MODERATE, wakeup="all")
    assert herd["per_worker"][0]["replies_per_s"] < replies[0] - 0.1 * sum(replies)
    # nginx 1.21.6+ re-adds the socket after every 16th accept event: the first worker
    # goes to the tail of the wait queue, and the connections go round
    reordered = nginx_run(**MODERATE, wakeup="exclusive")
    assert reordered["worker_imbalance"] < 1.1
    spread = nginx_run(**MODERATE, listen="reuseport")
    assert spread["worker_imbalance"] < 1.1
    assert all(w["failed_accepts_per_s"] == 0 for w in spread["per_worker"])


def test_the_thundering_herd_pays_failed_accepts() -> None:
    herd = nginx_run(**MODERATE, wakeup="all")  # (the runs of the test above)
    exclusive = nginx_run(**MODERATE, wakeup="exclusive", server_params=NO_REORDER)
    failed = lambda r: sum(w["failed_accepts_per_s"] for w in r["per_worker"])  # noqa: E731
    assert failed(herd) > 5 * failed(exclusive) > 0


def test_the_accept_mutex_gives_the_holder_the_connections_and_the_others_a_capped_wait() -> None:
    """With accept_mutex on, only the holder watches the socket; the others try again
    when their own events or their accept_mutex_delay wake them.  At moderate load one
    worker keeps the mutex and takes nearly every connection, with no failed accept."""
    run = nginx_run(rate_per_s=10000.0, wakeup="mutex")
    replies = sorted((w["replies_per_s"] for w in run["per_worker"]), reverse=True)
    assert replies[0] > 0.95 * sum(replies)
    assert all(w["failed_accepts_per_s"] == 0 for w in run["per_worker"])
    # a shorter delay lets the others catch the mutex in the holder's free window
    quick = nginx_run(rate_per_s=10000.0, wakeup="mutex",
                      server_params={"accept_mutex_delay_s": 0.0005})
    assert quick["worker_imbalance"] < run["worker_imbalance"]


def test_a_worker_whose_capped_wait_timed_out_sleeps_uncapped_once_it_holds_the_mutex() -> None:
    """nginx caps the epoll_wait of a worker without the mutex at accept_mutex_delay, and
    only that one (ngx_process_events_and_timers): the holder sleeps until an event.  A
    worker whose capped wait once timed out used to return from every later wait at once,
    and spun (410,712 epoll_wait calls/s at 5,000 connections/s); at 2,000/s on 2 CPUs
    for 10 s the calls are a few per connection."""
    run = nginx_run(rate_per_s=2000.0, wakeup="mutex", cpus=2, workers=2, duration_s=10.0,
                    warmup_s=1.0)  # 56,954 calls/s before (9 s: one of the waits timed out)
    assert run["reply_rate_per_s"] == pytest.approx(2000.0, rel=0.05)
    assert run["select_calls_per_s"] < 4 * run["reply_rate_per_s"]


def test_a_worker_near_its_worker_connections_stops_trying_the_mutex() -> None:
    """ngx_accept_disabled: connection_n / 8 - free connections, counted down a loop at a
    time before the worker tries the mutex again."""
    config = RunConfig(server="nginx", cpus=2, wakeup="mutex", rate_per_s=1000.0,
                       duration_s=0.1, warmup_s=0.0, server_params={"max_connections": 16})
    worker = Host(config).workers[1]
    worker.open = 15  # one free: 16 / 8 - 1 = 1 loop without trying
    worker.after_accept_phase(0)
    assert worker.accept_disabled == 1
    assert not worker.try_accept_mutex() and worker.accept_disabled == 0
    assert worker.try_accept_mutex() or worker.mutex.owner is not None


def test_a_stalled_worker_overflows_its_own_queue_under_reuseport_only() -> None:
    """A rare request 1,400 times the mean stalls its worker for about 20 ms: its own
    reuseport queue keeps receiving a quarter of the SYNs and overflows; a shared queue
    is drained by the other workers."""
    stall = {"request_cost": "bimodal", "request_cost_share": 0.0005,
             "request_cost_ratio": 5000.0,
             # the testbed's queue (nginx's own 511 holds a 20-ms stall at 7,500/s a socket)
             "backlog": 128}
    fields = {"rate_per_s": 30000.0, "accept_limit": math.inf, "duration_s": 3.0,
              "server_params": stall}
    shared = nginx_run(listen="shared", **fields)
    reuseport = nginx_run(listen="reuseport", **fields)
    # (several workers stalled at once can overflow a shared queue too: rarely)
    assert reuseport["drops_per_s"]["total"] > 100
    assert shared["drops_per_s"]["total"] < reuseport["drops_per_s"]["total"] / 10
    assert reuseport["queues"]["accept_queue_max"] == reuseport["queues"]["accept_queue_capacity"]
    assert reuseport["response_time_ms"]["p99"] > 10 * shared["response_time_ms"]["p99"]


# -- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"server": "nginx", "cpus": 1, "workers": 3, "cpu_quota": 1.5}, "cpu_quota",
     "at most 1 CPU"),
    ({"server": "tux", "cpus": 2, "workers": 2}, "workers", "runs as one worker"),
    ({"server": "userver", "cpus": 2, "wakeup": "exclusive"}, "wakeup", "one of all"),
    ({"cpus": 0}, "cpus", ">= 1"),
    ({"listen": "both"}, "listen", "one of"),
])
def test_bad_multicore_settings_name_the_field(fields: dict, field: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict(fields)
    assert err.value.field == field and words in str(err.value)


def test_defaults_follow_the_cpus_and_the_server() -> None:
    assert RunConfig().cpus == 1 and RunConfig().workers == 1
    assert RunConfig(server="nginx", cpus=4).workers == 4
    assert RunConfig(server="nginx", cpus=4).wakeup == "exclusive"
    assert RunConfig(server="prefork", cpus=4).wakeup == "blocking"
    assert RunConfig(server="tux", cpus=4).workers == 1  # runs as one worker


def test_a_policy_instance_is_refused_for_several_workers() -> None:
    from acceptsim.models.policies import StaticLimit

    config = RunConfig(server="nginx", cpus=2, rate_per_s=1000.0, duration_s=0.2,
                       warmup_s=0.0)
    with pytest.raises(ConfigError, match="policy"):
        Host(config, StaticLimit(4))
    Host(config, lambda: StaticLimit(4)).run()  # a factory: one policy per worker


def test_the_command_line_shows_the_workers_and_the_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The commands' output, from ``acceptsim.cli.main`` in this process (a new Python
    for each, as ``python -m acceptsim`` is started in tests/test_cli.py, spends seconds
    on its imports)."""
    from acceptsim.cli import main

    assert main(["run", "--server", "nginx", "--cpus", "2", "--rate", "4000",
                 "--duration", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "per worker:" in out and "worker_imbalance" in out
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    for option in ("--cpus", "--workers", "--listen", "--wakeup", "--softirq"):
        assert option in help_text
    assert main(["servers"]) == 0
    servers = capsys.readouterr().out
    assert "--wakeup exclusive | all | mutex, default exclusive" in servers
    assert "--cpus N (default 1)" in servers


class _LeastLoaded:
    """A policy that accepts only while it holds no more connections than the least
    loaded of the other workers (reads their views)."""

    name = "least-loaded"

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def accept_limit(self, view) -> float:  # type: ignore[no-untyped-def]
        others = [v.open_connections for v in view.workers if v.worker != view.worker]
        self.seen.append((view.worker, len(view.workers)))
        return 1 if not others or view.open_connections <= min(others) + 2 else 0


def test_each_worker_binds_its_own_policy_and_its_view_reads_the_others() -> None:
    policies: list[_LeastLoaded] = []

    def factory() -> _LeastLoaded:
        policies.append(_LeastLoaded())
        return policies[-1]

    config = RunConfig(server="nginx", cpus=3, rate_per_s=20000.0, duration_s=0.5,
                       warmup_s=0.1, server_params={"reorder_accept_every": 0})
    host = Host(config, factory)
    record = host.run()
    assert len(policies) == 3
    for i, policy in enumerate(policies):
        assert policy.seen and {s for s in policy.seen} == {(i, 3)}
    # holding back the busiest worker evens the load that exclusive wake-up concentrates
    plain = run_point(config)
    assert record["worker_imbalance"] < plain["worker_imbalance"]
    assert host.workers[0].policy.view.workers[2] is host.workers[2].policy.view


# -- a CPU quota on several workers ------------------------------------------------------------
def _busy_run(**fields: object) -> tuple[dict, Host]:
    config = RunConfig.from_dict({
        "server": "nginx", "cpus": 4, "rate_per_s": 120000.0, "duration_s": 1.0,
        "warmup_s": 0.25, "seed": 2, "cpu_period_s": 0.01,
        "kernel": "linux-2.4",  # its tick is the tests' tolerance (RunConfig().kernel)
        **fields})
    host = Host(config)
    return host.run(), host


def test_a_server_wide_quota_caps_the_workers_together() -> None:
    """One cgroup of 1.5 CPUs over four saturated workers: their task time adds up to the
    quota, never more; its counters are the group's (one period a period, not four)."""
    record, host = _busy_run(cpu_quota=1.5)
    task = sum(v for k, v in record["cpu_share"].items() if k not in ("kernel", "idle"))
    assert 1.0 < task <= 1.5 + 1e-6
    window_periods = (1.0 - 0.25) / 0.01
    assert record["cfs"]["periods"] == pytest.approx(window_periods, abs=1)
    assert record["cfs"]["throttled_periods"] > 0.5 * window_periods
    # unlimited, the same load takes more than the quota
    free, _ = _busy_run()
    assert sum(v for k, v in free["cpu_share"].items() if k not in ("kernel", "idle")) > 2.0


def test_a_quota_per_worker_caps_each_worker_and_the_server_wide_one_shares_it() -> None:
    """Exclusive wake-up without re-adding concentrates the load on worker 0: a quota of
    0.25 CPU per worker holds it at 0.25, while the same CPU shared by the server (1.0)
    lets it take what the others leave.  Worker 0 woken while throttled has left the
    socket's wait queue, so the next connections wake worker 1: the capped worker's
    load moves on, and both serve the offered 15,000/s."""
    fields = {"rate_per_s": 15000.0, "server_params": {"reorder_accept_every": 0}}
    each, _ = _busy_run(cpu_quota=0.25, cpu_quota_scope="worker", **fields)
    shared, _ = _busy_run(cpu_quota=1.0, **fields)
    # (and what a worker overran to the next tick at the window's end: sim.cpu.Bandwidth)
    tick = RunConfig().kernel.sched_tick_s
    assert max(w["cpu_share"] for w in each["per_worker"]) <= 0.25 + tick / 0.75
    assert shared["per_worker"][0]["cpu_share"] > 0.3
    first = [run["per_worker"][0]["replies_per_s"] for run in (each, shared)]
    assert first[0] < 0.8 * first[1]
    for run in (each, shared):
        assert run["reply_rate_per_s"] == pytest.approx(15000, rel=0.02)


@pytest.mark.parametrize(("fields", "words"), [
    ({"cpus": 4, "server": "nginx", "cpu_quota": 4.5}, "at most 4 CPUs"),
    ({"cpus": 4, "server": "nginx", "cpu_quota": 1.5, "cpu_quota_scope": "worker"}, "at most 1"),
    ({"cpu_quota": 1.5}, "at most 1"),
])
def test_a_quota_beyond_its_cgroup_s_cpus_is_refused(fields: dict, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        RunConfig.from_dict(fields)
    assert err.value.field == "cpu_quota" and words in str(err.value)


def test_the_group_gets_its_quota_and_a_period_at_most_its_tick_overruns_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel notices the group's used-up quota at a tick (sim.cpu.Bandwidth):
    in a period the group uses at most its quota and what its 4 CPUs ran on to the next
    tick, and each overrun is paid from the next periods' quotas, so over the run it
    uses at most its quota per period (the debt left at the end at most one overrun)."""
    from acceptsim.sim import cpu as cpu_module

    used: list[float] = []
    refill = cpu_module.Bandwidth._refill

    def watched(self, value):  # type: ignore[no-untyped-def]
        used.append(self._used() - self._used_at_start)
        refill(self, value)

    monkeypatch.setattr(cpu_module.Bandwidth, "_refill", watched)
    _busy_run(cpu_quota=1.5)
    tick = RunConfig().kernel.sched_tick_s
    quota = 1.5 * 0.01
    assert len(used) > 50
    assert max(used) <= quota + 4 * tick + 1e-9
    assert max(used) > quota + 1e-3  # it overruns (fails with the quota enforced at once)
    assert sum(used) <= len(used) * quota + 4 * tick + 1e-9


# -- HAProxy's listener ----------------------------------------------------------------------
def haproxy_run(mode: str, rate: float = 10000.0) -> dict:
    """1 s at 10,000/s: at seeds 1-5 the margins of the test below are as wide as after
    2 s (off's imbalance above on's by 0.18-0.20 (> 0.15), on's 1.11-1.13 (< 1.25), fair's
    at most 1.0004 (< 1.02), the accepting threads' peak 1.41-1.45 of the replies')."""
    return run_point(RunConfig.from_dict({
        "server": "haproxy", "cpus": 4, "accept_limit": 4, "rate_per_s": rate,
        "duration_s": 1.0, "warmup_s": 0.25, "seed": 1, "server_params": {"multi_queue": mode}}))


def test_haproxy_hands_connections_to_threads_by_its_multi_queue() -> None:
    """The listener wakes every thread; the one that accepts hands each connection on:
    to the less loaded of two rotating threads (on), in turn (fair), or keeps it (off,
    where the first threads to wake take more)."""
    on, fair, off = haproxy_run("on"), haproxy_run("fair"), haproxy_run("off")
    assert fair["worker_imbalance"] < 1.02
    assert on["worker_imbalance"] < 1.25
    assert off["worker_imbalance"] > on["worker_imbalance"] + 0.15
    # the accepting threads are the same; the replies follow the hand-over
    accepts = [w["accept_rate_per_s"] for w in on["per_worker"]]
    replies = [w["replies_per_s"] for w in on["per_worker"]]
    assert max(accepts) > 1.25 * max(replies) and sum(accepts) == pytest.approx(
        sum(replies), rel=0.01)
    # at most maxaccept (the accept-limit) connections a wake-up
    for w in on["per_worker"]:
        assert w["accepts_per_phase"] is None or w["accepts_per_phase"] <= 4


@pytest.mark.parametrize("wakeup", ["exclusive", "all", "mutex"])
def test_clients_gone_before_their_connection_is_accepted(wakeup: str) -> None:
    """Overload, a short client timeout and a CPU quota: accept() takes connections
    whose clients have given up (their FIN comes with the call); every worker and layout
    keeps its books (the invariants above) and serves the rest."""
    config = RunConfig.from_dict({
        "server": "nginx", "cpus": 2, "wakeup": wakeup, "rate_per_s": 6000.0,
        "timeout_s": 0.2, "cpu_quota": 0.1, "cpu_period_s": 0.01, "duration_s": 2.0,
        "warmup_s": 0.5, "kernel": "linux-modern", "seed": 4})
    record = Host(config).run()
    assert record["connections"]["timed_out"] > 0
    assert record["reply_rate_per_s"] > 500
