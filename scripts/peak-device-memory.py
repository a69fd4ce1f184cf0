#!/usr/bin/env python3
"""Adds "peak_device_memory_mib" to every JSON record of a benchmark run: the most device
memory in use (nvidia-smi's memory.used, whole device: the CUDA context included) sampled
between the record's process start and its report ("started_unix_ms", "reported_unix_ms"),
as "peak_rss_mib" is for host memory; with several GPUs, the most on any one of them. Samples
come from
    nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 100
which scripts/gpu-run.sh runs beside every mode. A record without its window, or with no
sample in it, gets null.

usage: peak-device-memory.py RECORDS.jsonl SAMPLES.csv   (rewrites RECORDS.jsonl)
"""
import json
import sys
import time
from datetime import datetime


def samples(path):
    out = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 2:
                continue
            try:
                # nvidia-smi prints local time; mktime reads it in the same zone.
                stamp = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
                ms = time.mktime(stamp.timetuple()) * 1000 + stamp.microsecond / 1000
                out.append((ms, int(parts[1])))
            except ValueError:
                continue
    return out


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
            lo, hi = r.get("started_unix_ms"), r.get("reported_unix_ms")
            inside = [mib for ms, mib in sampled if lo and hi and lo <= ms <= hi]
            r["peak_device_memory_mib"] = max(inside) if inside else None
            lines.append(json.dumps(r))
    with open(records_path, "w") as f:
        f.write("".join(l + "\n" for l in lines))


if __name__ == "__main__":
    main()
