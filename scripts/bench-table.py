#!/usr/bin/env python3
"""Tables of docs/PERFORMANCE.md from the JSON lines of cuzk-bench and supraseal-bench.

    scripts/bench-table.py bench.jsonl [more.jsonl ...]

Prints, in Markdown:
1. per workload and system: cold run (run 0), warm runs (median of runs >= 1), peak RSS, and
   the ratio of each system's warm median to cuzk's (same run, same inputs);
2. per workload, cuzk's phases (median of the warm runs; run 0 when there is only one);
3. for cuzk GPU records that carry scalar counts, each GPU phase against its arithmetic floor.

The floor counts modular multiplications only and assumes the H200 issues them at its IMAD
rate: 132 SMs x 64 IMAD/clock x 1.98 GHz = 16.7e12 IMAD/s, with an Fr multiplication = 264
IMAD and an Fp multiplication = 588 IMAD (the numbers of the issue). Operation counts:
- NTT phase of domain n: 6 NTTs of n/2 * log2(n) butterflies (one Fr mul each) plus 5n Fr muls
  for the three coset shifts, a*b and the division by Z (H = (icoset(A*B) - C's coefficients)/z:
  C is never moved to the coset; records before 2026-12-06's six-transform H were against 7 NTTs
  and 6n).
- MSM of N G1 points (Pippenger, window c chosen to minimise the count): N * ceil(255/c)
  bucket additions at 10 Fp muls (XYZZ mixed addition) plus ceil(255/c) * 2^(c+1) bucket
  reduction additions at 14 Fp muls. G2 points: Fp2 arithmetic, 3 Fp muls per Fp2 mul.
- Batch addition: one mixed addition (10 Fp muls; x3 in G2) per scalar equal to one.
A second floor, the batched-affine one (issue 22's MSM techniques), prices what an MSM with
signed digits (2^(c-1) buckets a window) and batched affine accumulation would need: N *
ceil(255/c) additions at 6 Fp muls (Montgomery's trick: an inversion shared by a batch, ~3
muls of it an addition, plus the slope and the new point's ~3) and ceil(255/c) * 2^c reduction
additions at 14; the batch addition at 6 a point. cuzk's MSM (signed digits, XYZZ additions)
and sppark's are measured against both; the table says which is which.
Memory traffic, launch latency and host work are not in the floor: it is a lower bound, and the
fraction says how far a phase is from it. Records that carry the SM clock the card held while
busy (busy_sm_clock_mhz, scripts/device-samples.py) also get the GPU phases against the floor at
that clock: the boost clock is an assumption of the floor, the held clock a measurement.
"""
import json
import math
import statistics
import sys
from collections import OrderedDict

BOOST_MHZ = 1980
IMAD_PER_S = 132 * 64 * BOOST_MHZ * 1e6
FR_MUL_S = 264 / IMAD_PER_S
FP_MUL_S = 588 / IMAD_PER_S
MADD_FP_MULS = 10
ADD_FP_MULS = 14
AFFINE_ADD_FP_MULS = 6
G2_FACTOR = 3

# Rows of cuzk's phase table: the spans of src/timings.rs (SPANS) in its order, by the keys
# cuzk-bench writes for them ("<span>_s"; load() derives spmv_host_s); tests/phases.rs checks
# them. Not shown: queue_wait, input_check, proving_wait.
CUZK_PHASES = [
    ("srs_load_s", "srs_load"),
    ("srs_upload_s", "srs_upload"),
    ("pin_s", "pin"),
    ("shape_extract_s", "shape_extract (once per circuit id)"),
    ("shape_upload_s", "shape_upload (matrices to the device, once)"),
    ("synthesis_s", "synthesis"),
    ("witness_s", "... witness generation"),
    ("spmv_host_s", "... SpMV on the host (A·z, B·z, C·z)"),
    ("prep_msm_s", "prep_msm"),
    ("pin_h2d_s", "H2D of a, b, c"),
    ("witness_upload_s", "witness upload (compact encoding + H2D)"),
    ("spmv_gpu_s", "SpMV on the GPU (decode + A·z, B·z, C·z)"),
    ("ntt_s", "NTT (6 × domain)"),
    ("msm_h_s", "MSM H"),
    ("batch_add_s", "batch addition"),
    ("msm_l_s", "tail MSM L"),
    ("msm_a_s", "tail MSM A"),
    ("msm_b_g1_s", "tail MSM B_G1"),
    ("msm_b_g2_s", "MSM B_G2"),
    ("msm_at_once_s", "... H, batch addition, L, A, B_G1, B_G2 at the same time: their wall time"),
    ("assembly_s", "assembly"),
    ("verify_s", "self-verify"),
]
# Rows after the phases.
CUZK_TOTALS = [
    ("total_s", "**total**"),
    ("run_peak_above_baseline_mib", "host memory of the run: peak RSS above its start, MiB"),
    ("peak_device_memory_mib", "peak device memory in use (whole device), MiB"),
]


# The phases whose time msm_at_once_s holds when they overlapped (src/timings.rs, AT_ONCE).
AT_ONCE = {"msm_h_s", "batch_add_s", "msm_l_s", "msm_a_s", "msm_b_g1_s", "msm_b_g2_s"}


def msm_floor(points, g2=False, affine=False):
    """Pippenger over `points` at its best window: unsigned digits and mixed additions, or
    (`affine`) signed digits and batched affine additions."""
    if points <= 0:
        return 0.0
    add, buckets = (AFFINE_ADD_FP_MULS, lambda c: 2 ** c) if affine else (MADD_FP_MULS, lambda c: 2 ** (c + 1))
    best = min(points * math.ceil(255 / c) * add + math.ceil(255 / c) * buckets(c) * ADD_FP_MULS for c in range(4, 24))
    return best * FP_MUL_S * (G2_FACTOR if g2 else 1)


def gpu_floors(r, affine=False):
    """(phase key, floor seconds) for a record with log_domain and scalars; `affine`: the
    batched-affine floor of the MSMs and the batch addition."""
    n = 2 ** r["log_domain"]
    k = r["log_domain"]
    s = r["scalars"]
    ones_g1 = s["l"][1] + s["a"][1] + s["b"][1]
    add = AFFINE_ADD_FP_MULS if affine else MADD_FP_MULS
    return [
        ("ntt_s", (6 * n // 2 * k + 5 * n) * FR_MUL_S),
        ("msm_h_s", msm_floor(n, affine=affine)),
        ("batch_add_s", (ones_g1 + G2_FACTOR * s["b"][1]) * add * FP_MUL_S),
        ("msm_l_s", msm_floor(s["l"][2], affine=affine)),
        ("msm_a_s", msm_floor(s["a"][2], affine=affine)),
        ("msm_b_g1_s", msm_floor(s["b"][2], affine=affine)),
        ("msm_b_g2_s", msm_floor(s["b"][2], g2=True, affine=affine)),
    ]


def fmt(x):
    return "—" if x is None else f"{x:.4g}"


def load(paths):
    groups = OrderedDict()
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                # Derived columns: where SpMV ran, and a run's own host memory peak.
                if "spmv_s" in r:
                    r["spmv_host_s" if r.get("spmv_on") != "device" else "spmv_gpu_s"] = r["spmv_s"]
                if r.get("run_peak_rss_mib") is not None and r.get("run_baseline_rss_mib") is not None:
                    r["run_peak_above_baseline_mib"] = r["run_peak_rss_mib"] - r["run_baseline_rss_mib"]
                groups.setdefault(r["workload"], OrderedDict()).setdefault(r["system"], []).append(r)
    return groups


def warm(records):
    runs = [r for r in records if r.get("run", 0) >= 1]
    return runs or records


def median(records, key):
    values = [r[key] for r in records if key in r]
    return statistics.median(values) if values else None


def main(paths):
    groups = load(paths)
    commits = {r.get("commit") for ws in groups.values() for rs in ws.values() for r in rs if r.get("commit")}
    gpus = {r.get("gpu") for ws in groups.values() for rs in ws.values() for r in rs if r.get("gpu")}
    print(f"commit {', '.join(sorted(c for c in commits if c))}; GPU {', '.join(sorted(g for g in gpus if g)) or '—'}\n")

    print("| workload | system | cold (run 0) s | warm s (median, runs) | peak RSS MiB | peak device MiB | warm / cuzk warm |")
    print("|---|---|---|---|---|---|---|")
    for workload, systems in groups.items():
        base = median(warm(systems["cuzk"]), "wall_s") if "cuzk" in systems else None
        for system, records in systems.items():
            cold = next((r["wall_s"] for r in records if r.get("run") == 0), None)
            w = warm(records)
            m = median(w, "wall_s")
            ratio = f"{m / base:.2f}×" if base and m else "—"
            rss = max(r.get("peak_rss_mib", 0) for r in records)
            device = max((r["peak_device_memory_mib"] for r in records if r.get("peak_device_memory_mib") is not None), default=None)
            print(f"| {workload} | {system} | {fmt(cold)} | {fmt(m)} ({len(w)}) | {rss:.0f} | {fmt(device)} | {ratio} |")

    for workload, systems in groups.items():
        cuzk = {s: rs for s, rs in systems.items() if s.startswith("cuzk") and "synthesis_s" in rs[0]}
        if not cuzk:
            continue
        print(f"\n**{workload}** — cuzk phases, seconds (median of warm runs; run 0 where only one)\n")
        names = list(cuzk)
        print("| phase | " + " | ".join(f"{n} warm" for n in names) + " | " + " | ".join(f"{n} run 0" for n in names) + " |")
        print("|---|" + "---|" * (2 * len(names)))
        for key, label in CUZK_PHASES + CUZK_TOTALS:
            warm_values = [median(warm(cuzk[n]), key) for n in names]
            cold_values = [next((r.get(key) for r in cuzk[n] if r.get("run") == 0), None) for n in names]
            if all(not v for v in warm_values + cold_values):
                continue
            print(f"| {label} | " + " | ".join(fmt(v) for v in warm_values) + " | " + " | ".join(fmt(v) for v in cold_values) + " |")

    for affine, name in [(False, "mixed-addition floor"), (True, "batched-affine floor")]:
        floor_table(groups, affine, name)

    pipeline_table([r for ws in groups.values() for rs in ws.values() for r in rs if "sectors" in r])
    memory_table([r for ws in groups.values() for rs in ws.values() for r in rs if r.get("run_anon_peak_live_heap_mib") is not None])


def memory_table(records):
    """Records that split their anonymous peak: live heap, the allocators' kept free pages, the
    rest (fragmentation, pinned buffers, the CUDA driver's; negative when the kept pages counted
    were not all resident)."""
    if not records:
        return
    print("\n**Host memory at the anonymous peak** (MiB; run_anon_peak_* fields)\n")
    print("| workload | system | run | anonymous before / peak | live heap peak | at the peak: live / kept free / rest | pinned staging |")
    print("|---|---|---|---|---|---|---|")
    for r in records:
        live, kept = r["run_anon_peak_live_heap_mib"], r["run_anon_peak_kept_free_mib"]
        rest = r["run_peak_anon_mib"] - live - kept
        print(f"| {r['workload']} | {r['system']} | {r['run']} | {fmt(r.get('run_baseline_anon_mib'))} / {fmt(r['run_peak_anon_mib'])} | "
              f"{fmt(r.get('run_peak_live_heap_mib'))} | {live} / {kept} / {rest} | {fmt(r.get('pinned_host_mib'))} |")


def floor_table(groups, affine, name):
    print(f"\n**GPU phases against the arithmetic floor: the {name}** (cuzk, median of warm runs)\n")
    print("| workload | domain | ones L/A/B | full-width L/A/B | NTT | MSM H | batch add | tail L | tail A | tail B_G1 | B_G2 | all GPU phases | busy SM clock: all phases against its floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workload, systems in groups.items():
        records = [r for r in warm(systems.get("cuzk", [])) if r.get("backend") == "gpu" and "scalars" in r]
        if not records:
            continue
        r = records[0]
        cells = []
        total_floor = total_measured = 0.0
        # MSMs that ran at the same time count once, as their wall time (Timings::serial_ns).
        at_once = median(records, "msm_at_once_s") or 0
        for key, floor in gpu_floors(r, affine):
            measured = median(records, key)
            total_floor += floor
            if not (at_once and key in AT_ONCE):
                total_measured += measured or 0
            cells.append(f"{fmt(measured)} s / {fmt(floor)} s = {100 * floor / measured:.0f} %" if measured else "—")
        total_measured += at_once
        s = r["scalars"]
        ones = "/".join(f"{v[1] / 1e6:.2f}M" for v in (s["l"], s["a"], s["b"]))
        full = "/".join(f"{v[2] / 1e6:.2f}M" for v in (s["l"], s["a"], s["b"]))
        clocks = [c["median"] for c in (x.get("busy_sm_clock_mhz") for x in records) if c]
        held = "—"
        if clocks:
            clock = statistics.median(clocks)
            held = f"{clock:.0f} MHz: {100 * total_floor * BOOST_MHZ / clock / total_measured:.0f} %"
        print(f"| {workload} | 2^{r['log_domain']} | {ones} | {full} | " + " | ".join(cells)
              + f" | {fmt(total_measured)} s / {fmt(total_floor)} s = {100 * total_floor / total_measured:.0f} % | {held} |")


def pipeline_table(records):
    """porep-sector records: sectors per call against the 1-sector calls of the same system."""
    if not records:
        return
    print("\n**Whole sectors through the pipeline** (porep-sector; throughput against the 1-sector calls of the same run)\n")
    print("| system | sectors × partitions | wall s | s per sector | throughput vs 1 sector | GPU busy | synthesis busy | proving busy | run peak RSS above start MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    single = {}
    for r in records:
        if r["sectors"] == 1:
            single.setdefault(r["system"], []).append(r["wall_per_sector_s"])
    for r in records:
        baseline = single.get(r["system"])
        speedup = f"{statistics.median(baseline) / r['wall_per_sector_s']:.2f}×" if baseline else "—"
        busy = lambda key: f"{100 * r[key]:.0f} %" if r.get(key) is not None else "—"
        print(f"| {r['system']} | {r['sectors']} × {r['partitions']} | {fmt(r['wall_s'])} | {fmt(r['wall_per_sector_s'])} | {speedup} | "
              f"{busy('gpu_busy_fraction')} | {busy('synthesis_busy_fraction')} | {busy('proving_busy_fraction')} | {fmt(r.get('run_peak_above_baseline_mib'))} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
