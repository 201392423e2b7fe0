#!/usr/bin/env python3
"""The server's idle and stolen time during one client run, from `perf script` output of the
sched_switch and sched_wakeup events of every CPU (bench/lib.sh records them when BENCH_SCHED=1).

    sched_idle.py TIDS_FILE < perf-script-output

TIDS_FILE: the server's thread ids, one a line. The run's span is from the first event to the
last (perf records for exactly the client's life). Prints "span_s idle_s stolen_s": the span, the
time in it when no server thread ran or was ready to run (the server waited for requests: the
client's doing), and the time when one was ready but none ran (another process had the server's
CPU: the machine's noise).
"""
import re
import sys

tids = {int(t) for t in open(sys.argv[1]).read().split()}
state = {}  # tid -> "run" | "ready" | "sleep"
idle = stolen = 0.0
start = last = None
SWITCH = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)")
WAKE = re.compile(r"pid=(\d+)")


def mode():
    values = state.values()
    if "run" in values:
        return "run"
    if "ready" in values:
        return "ready"
    return "sleep"


for line in sys.stdin:
    m = re.search(r"\s(\d+\.\d+):\s+(sched:sched_\w+):\s(.*)$", line)
    if not m:
        continue
    t, event, rest = float(m.group(1)), m.group(2), m.group(3)
    if start is None:
        start = last = t
    cur = mode()
    if cur == "sleep":
        idle += t - last
    elif cur == "ready":
        stolen += t - last
    last = t
    if event == "sched:sched_switch":
        s = SWITCH.search(rest)
        if not s:
            continue
        prev, prev_state, nxt = int(s.group(1)), s.group(2), int(s.group(3))
        if prev in tids:
            state[prev] = "ready" if prev_state.startswith("R") else "sleep"
        if nxt in tids:
            state[nxt] = "run"
    else:
        w = WAKE.search(rest)
        if w and int(w.group(1)) in tids and state.get(int(w.group(1))) != "run":
            state[int(w.group(1))] = "ready"
if start is None:
    sys.exit("sched_idle.py: no sched events in the input")
print(f"{last - start:.6f} {idle:.6f} {stolen:.6f}")
