"""What each mechanism of the send path (acceptsim/models/tcp.py) does to the SPECweb99-like curves.

For each server and accept-limit, the reply rate at each target request rate with the
mechanisms added one at a time (docs/design.md, "Replies larger than a packet"):

* one burst: every reply one segment (``mss_bytes`` and ``tcp_wmem_bytes`` beyond any
  reply), no link: the model as it was before the send path;
* + segments and ACKs: 1,448-byte segments and their ACKs, a buffer no reply fills;
* + send buffer: the 16 KB send buffer (partial writes);
* + links: the two gigabit links (every default).

Two-minute runs from the start (the paper's protocol), seed 1::

    python tools/specweb_mechanisms.py                      # userver and TUX, 15k/22.5k/30k
    python tools/specweb_mechanisms.py --servers tux --targets 12000,18000 --jobs 2
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from acceptsim.models.costs import CLUSTER1
from acceptsim.models.experiment import RunConfig, simulate
from acceptsim.models.kernel import LINUX_24
from acceptsim.models.workloads import SpecWeb99Params
from acceptsim.sim.sweep import run_many

#: beyond any reply of the workload (the largest is 921,850 bytes)
BEYOND = 1 << 30
#: a link so fast that its serialisation is nil
NO_LINK = CLUSTER1.replace(nic_bits_per_s=1e15).to_dict()

STEPS: dict[str, dict[str, Any]] = {
    "one burst (before)": {"kernel": LINUX_24.replace(mss_bytes=BEYOND,
                                                      tcp_wmem_bytes=BEYOND).to_dict(),
                           "costs": NO_LINK},
    "+ segments and ACKs": {"kernel": LINUX_24.replace(tcp_wmem_bytes=BEYOND).to_dict(),
                            "costs": NO_LINK},
    "+ send buffer": {"kernel": LINUX_24.to_dict(), "costs": NO_LINK},
    "+ links (all)": {"kernel": LINUX_24.to_dict(), "costs": CLUSTER1.to_dict()},
}


def run(point: dict[str, Any]) -> dict[str, Any]:
    fields = dict(point)
    step = fields.pop("step")
    record = simulate(RunConfig.from_dict(fields))
    return {"step": step, "server": fields["server"], "limit": fields["accept_limit"],
            "target": round(fields["rate_per_s"] * SpecWeb99Params().mean_requests),
            "reply": record["reply_rate_per_s"], "links": record["link_utilization"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="userver,tux")
    parser.add_argument("--targets", default="15000,22500,30000",
                        help="target request rates (connections/s x 7.2)")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    targets = [float(t) for t in args.targets.split(",")]
    mean_requests = SpecWeb99Params().mean_requests
    points = [
        {"server": server, "workload": "specweb99", "accept_limit": limit,
         "rate_per_s": target / mean_requests, "duration_s": 120.0, "warmup_s": 0.0,
         "seed": 1, "step": step, **fields}
        for server in args.servers.split(",") for step, fields in STEPS.items()
        for limit in (1, math.inf) for target in targets
    ]  # fmt: skip
    out = run_many(run, points, jobs=args.jobs, progress=False)
    for server in args.servers.split(","):
        cols = [(limit, round(t)) for limit in (1, math.inf) for t in targets]
        print(f"\n{server}: reply rate (replies/s) by accept-limit @ target requests/s")
        print(f"{'':22}" + "".join(f"{f'{lim:g} @ {t:,}':>16}" for lim, t in cols)
              + f"{'busiest link':>14}")
        for step in STEPS:
            rows = {(r["limit"], r["target"]): r for r in out
                    if r["server"] == server and r["step"] == step}
            busiest = max(u for r in rows.values() for u in r["links"])
            print(f"{step:22}" + "".join(f"{rows[c]['reply']:16,.0f}" for c in cols)
                  + f"{busiest:14.0%}")


if __name__ == "__main__":
    main()
