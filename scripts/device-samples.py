#!/usr/bin/env python3
"""Adds what nvidia-smi sampled beside a benchmark run to each of its JSON records, over the
record's window (its process start "started_unix_ms" to its report "reported_unix_ms"):

- "peak_device_memory_mib": the most device memory in use (memory.used, whole device, the
  CUDA context included), as "peak_rss_mib" is for host memory; with several GPUs, the most
  on any one of them.
- "busy_sm_clock_mhz" {"min", "median", "max"}, "busy_power_w" {"median", "max"} and
  "busy_samples": the SM clock and the board power of the samples where the GPU was busy
  (utilization.gpu >= BUSY_PERCENT), and how many there were; "busy_clock_reasons": the
  clock event reasons (clocks_event_reasons.active, nvidia-smi's bit names) seen in them.
  The arithmetic floor of scripts/bench-table.py assumes the H200's boost clock (1 980 MHz);
  these say what clock the card held while it proved.

Samples come from
    nvidia-smi --query-gpu=timestamp,memory.used,clocks.sm,power.draw,utilization.gpu,
               clocks_event_reasons.active --format=csv,noheader,nounits -lms 100
which scripts/gpu-run.sh runs beside every mode (memory alone where the driver lacks a field).
A record without its window, or with no sample in it, gets null.

usage: device-samples.py RECORDS.jsonl SAMPLES.csv   (rewrites RECORDS.jsonl)
"""
import json
import statistics
import sys
import time
from datetime import datetime

BUSY_PERCENT = 90

# clocks_event_reasons.active bits (nvidia-smi -q -d PERFORMANCE names them the same way).
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def number(text, parse=float):
    try:
        return parse(text)
    except ValueError:
        return None


def samples(path):
    """(unix ms, memory MiB, SM MHz, watts, utilization %, reasons bits); None where absent."""
    out = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 2:
                continue
            try:
                # nvidia-smi prints local time; mktime reads it in the same zone.
                stamp = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
            except ValueError:
                continue
            ms = time.mktime(stamp.timetuple()) * 1000 + stamp.microsecond / 1000
            memory = number(parts[1], int)
            if memory is None:
                continue
            extra = parts[2:6] + [""] * (6 - len(parts))
            clock, power, busy = number(extra[0]), number(extra[1]), number(extra[2])
            reasons = number(extra[3], lambda s: int(s, 16))
            out.append((ms, memory, clock, power, busy, reasons))
    return out


def reason_names(bits):
    return sorted(name for bit, name in REASONS.items() if bits & bit) + (
        ["other"] if bits & ~sum(REASONS) else []
    )


def annotate(r, sampled):
    lo, hi = r.get("started_unix_ms"), r.get("reported_unix_ms")
    inside = [s for s in sampled if lo and hi and lo <= s[0] <= hi]
    r["peak_device_memory_mib"] = max(s[1] for s in inside) if inside else None
    busy = [s for s in inside if s[4] is not None and s[4] >= BUSY_PERCENT and s[2] is not None]
    r["busy_samples"] = len(busy)
    if not busy:
        r["busy_sm_clock_mhz"] = r["busy_power_w"] = r["busy_clock_reasons"] = None
        return
    clocks = [s[2] for s in busy]
    powers = [s[3] for s in busy if s[3] is not None]
    r["busy_sm_clock_mhz"] = {"min": min(clocks), "median": statistics.median(clocks), "max": max(clocks)}
    r["busy_power_w"] = {"median": statistics.median(powers), "max": max(powers)} if powers else None
    bits = 0
    for s in busy:
        bits |= s[5] or 0
    r["busy_clock_reasons"] = reason_names(bits)


def main():
    records_path, samples_path = sys.argv[1], sys.argv[2]
    sampled = samples(samples_path)
    lines = []
    with open(records_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                lines.append(line)
                continue
            annotate(r, sampled)
            lines.append(json.dumps(r))
    with open(records_path, "w") as f:
        f.write("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main()
