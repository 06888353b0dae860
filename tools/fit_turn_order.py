"""Fit how long httperf's turns keep their order on the testbed's client CPU
(``acceptsim.measure.testbed.CLIENT_TURN_ORDER_S``) to the SYNs the kernel retransmitted
in the one-worker sets recorded without a time series (no sampler beside httperf):
the root-mean-square error of the retransmitted fraction (``acceptsim.measure.turn_order``)
for each candidate, and the sets recorded with one for comparison (their sampler
reorders the turns ten times a second, so the candidate hardly moves them).

    python tools/fit_turn_order.py [--candidates 0,0.8,1.0,1.2,1.44,1.7,2.0,2.5] [--points]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from acceptsim.config_io import load_params_file
from acceptsim.measure.turn_order import fit_turn_order, retransmitted_fractions, rms_error

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "measured"
#: the one-worker sets and their costs, without a time series and with one
UNSAMPLED = {
    "nginx-loopback-quota": "nginx-loopback-quota.params.toml",
    "nginx-loopback-quotas": "nginx-loopback-quotas.params.toml",
    "nginx-loopback-workers/workers-1": "nginx-loopback-workers.params.toml",
}
SAMPLED = {
    "nginx-loopback-cgroup-scopes/workers-1": "nginx-loopback-cgroup-scopes.params.toml",
    "nginx-loopback-timeseries": "nginx-loopback-timeseries.params.toml",
    "nginx-loopback-timeseries-2": "nginx-loopback-timeseries-2/params.toml",
}


def sets(table: dict[str, str]) -> list:
    return [(DATA / folder, load_params_file(DATA / params)[0]) for folder, params in table.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", default="0,0.8,1.0,1.2,1.44,1.7,2.0,2.5",
                        help="mean times the order lasts to try, seconds (0: none)")
    parser.add_argument("--points", action="store_true",
                        help="also print each point at the best candidate")
    args = parser.parse_args()
    candidates = [float(c) for c in args.candidates.split(",")]
    unsampled, sampled = sets(UNSAMPLED), sets(SAMPLED)
    results = fit_turn_order(unsampled, candidates)
    for order, rms in results:
        print(f"turn_order_s {order:5.2f}: rms {rms:.3f} (sets without a sampler), "
              f"{rms_error(retransmitted_fractions(sampled, order)):.3f} (with one)")
    best = min(results, key=lambda r: r[1])[0]
    print(f"least: {best:g} s")
    if args.points:
        for p in retransmitted_fractions(unsampled, best):
            print(f"  k={p.processes_per_cpu:2d} measured {p.measured:.2f} "
                  f"simulated {p.simulated:.2f}  {p.name}")


if __name__ == "__main__":
    main()
