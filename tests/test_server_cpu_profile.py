"""tools/server_cpu_profile.py: perf's samples of the server's CPU sorted by system call,
per reply (the measurement in tests/data/measured/README.md, "Where nginx's CPU goes past
saturation")."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from tool_module import load_tool

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def profile() -> ModuleType:
    return load_tool("server_cpu_profile")


#: ``perf script -F comm,tid,time,ip,sym`` of five samples: the idle task, a close whose
#: FIN was received in the softirq inside it, an accept, nginx's own code, and a timer
#: interrupt outside any system call
SCRIPT = """\
swapper     0 100.000100:
\tffffffff82238806 pv_native_safe_halt
\tffffffff82238807 default_idle

nginx  2434 100.000200:
\tffffffff81000001 tcp_rcv_state_process
\tffffffff81000002 tcp_v4_rcv
\tffffffff81000003 net_rx_action
\tffffffff81000004 handle_softirqs
\tffffffff81000005 __local_bh_enable_ip
\tffffffff81000006 __tcp_close
\tffffffff81000007 __x64_sys_close
\tffffffff81000008 do_syscall_64
\tffffffff81000009 entry_SYSCALL_64_after_hwframe
\t          1e76e0 __close

nginx  2434 100.000450:
\tffffffff8100000a inet_csk_accept
\tffffffff8100000b __x64_sys_accept4
\tffffffff81000008 do_syscall_64
\t          1e76e1 accept4

nginx  2434 100.000700:
\t          55e2c0 ngx_http_process_request_line
\t          55e2c1 ngx_http_wait_request_handler

nginx  2434 100.000950:
\tffffffff8100000c hrtimer_interrupt
\tffffffff8100000d sysvec_apic_timer_interrupt
\tffffffff8100000e asm_sysvec_apic_timer_interrupt
\t          55e2c2 ngx_palloc

"""


def test_each_sample_falls_in_its_system_call_or_the_tasks_own_code(
        profile: ModuleType) -> None:
    got = [(tid, profile.category(frames)) for tid, _, frames in profile.samples(SCRIPT)]
    assert got == [(0, "user"), (2434, "close [softirq]"), (2434, "accept4"),
                   (2434, "user"), (2434, "irq")]


def test_the_workers_clock_starts_at_its_first_accept(profile: ModuleType) -> None:
    worker, t0 = profile.worker_samples(SCRIPT)
    assert t0 == pytest.approx(100.00045)
    assert [c for _, c in worker] == ["close [softirq]", "accept4", "user", "irq"]
    assert worker[1][0] == pytest.approx(0.0) and worker[0][0] < 0.0


def test_a_profile_without_an_accept_is_refused(profile: ModuleType) -> None:
    with pytest.raises(SystemExit, match="accept4"):
        profile.worker_samples(SCRIPT.replace("__x64_sys_accept4", "__x64_sys_read"))


def test_microseconds_per_reply(profile: ModuleType) -> None:
    # four samples at 4,000/s are 1 ms; over 10 replies, 100 us a reply
    got = profile.per_reply(["close", "close", "user", "accept4"], 10.0, 1 / 4000)
    assert got == pytest.approx({"close": 50.0, "user": 25.0, "accept4": 25.0})
