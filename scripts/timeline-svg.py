#!/usr/bin/env python3
"""Draws the timeline of one `cuzk-bench porep-sector` call as an SVG.

usage: scripts/timeline-svg.py RECORDS.jsonl OUT.svg [--sectors N] [--run R]

RECORDS.jsonl holds cuzk-bench's records; the call drawn is the porep-sector record of N sectors
(default: the most) and run R (default: the last). One row for synthesis (the call's synthesis
thread, all cores), one per proving lane, and one for the GPU (or the CPU backend's prover): each
partition's synthesis, then on its lane the host work before the device turn, the wait for the
turn, the NTT and MSM phases and the rest (assembly, the proof written). Gaps in the GPU row are
where the GPU idles.
"""

import argparse
import html
import json

STAGES = [
    ("synthesis", "#4c78a8"),
    ("host before the turn", "#f58518"),
    ("waiting for the turn", "#d8d8d8"),
    ("NTT and MSM phases", "#54a24b"),
    ("after the turn", "#eeca3b"),
]
COLOUR = dict(STAGES)
ROW, GAP, LEFT, TOP, WIDTH = 26, 8, 110, 40, 1100


def pick(records, sectors, run):
    calls = [r for r in records if r.get("workload", "").startswith("porep-") and "partition_timings" in r and "sectors" in r]
    if not calls:
        raise SystemExit("no porep-sector record in the file")
    sectors = sectors or max(r["sectors"] for r in calls)
    calls = [r for r in calls if r["sectors"] == sectors and (run is None or r["run"] == run)]
    if not calls:
        raise SystemExit(f"no porep-sector record of {sectors} sectors (run {run})")
    return calls[-1]


def prover_row(call):
    return "GPU" if call.get("backend") == "gpu" else "CPU prover"


def boxes(call):
    """(row, start, end, stage, label) for every stage of every partition."""
    prover = prover_row(call)
    out = []
    for p in call["partition_timings"]:
        label = f"s{p['sector']}p{p['partition']}"
        out.append(("synthesis", p["synthesis_at_s"], p["synthesized_at_s"], "synthesis", label))
        lane = f"lane {p['lane']}"
        t = p["proving_at_s"]
        for stage, length in (
            ("host before the turn", p["host_prep_s"]),
            ("waiting for the turn", p["turn_wait_s"]),
            ("NTT and MSM phases", p["device_s"]),
        ):
            out.append((lane, t, t + length, stage, label))
            if stage == "NTT and MSM phases":
                out.append((prover, t, t + length, stage, label))
            t += length
        out.append((lane, t, max(t, p["proven_at_s"]), "after the turn", label))
    return out


def svg(call):
    parts = boxes(call)
    lanes = sorted({row for row, *_ in parts if row.startswith("lane")}, key=lambda r: int(r.split()[1]))
    prover = prover_row(call)
    rows = ["synthesis"] + lanes + [prover]
    end = max(e for _, _, e, _, _ in parts) or 1.0
    scale = WIDTH / end
    height = TOP + len(rows) * (ROW + GAP) + 60
    busy = sum(e - s for row, s, e, _, _ in parts if row == prover)
    title = (
        f"{call['workload']}, run {call['run']}: {call['wall_s']:.1f} s, "
        f"{call['wall_per_sector_s']:.2f} s per sector, {prover} busy {busy / call['wall_s']:.0%}, "
        f"commit {call.get('commit', '?')[:7]}"
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{height}" font-family="sans-serif" font-size="11">',
        f'<text x="{LEFT}" y="18" font-size="13">{html.escape(title)}</text>',
    ]
    for i, row in enumerate(rows):
        y = TOP + i * (ROW + GAP)
        out.append(f'<text x="{LEFT - 8}" y="{y + ROW / 2 + 4}" text-anchor="end">{row}</text>')
        out.append(f'<rect x="{LEFT}" y="{y}" width="{WIDTH}" height="{ROW}" fill="#f7f7f7"/>')
        for r, s, e, stage, label in parts:
            if r != row or e <= s:
                continue
            x, w = LEFT + s * scale, max((e - s) * scale, 0.5)
            tip = f"{label} {stage}: {s:.3f}–{e:.3f} s"
            out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW}" fill="{COLOUR[stage]}" stroke="#fff" stroke-width="0.5"><title>{tip}</title></rect>')
            if row == "synthesis" and w > 28:
                out.append(f'<text x="{x + w / 2:.2f}" y="{y + ROW / 2 + 4}" text-anchor="middle" fill="#fff">{label}</text>')
    axis = TOP + len(rows) * (ROW + GAP)
    step = next(s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if end / s <= 12)
    tick = 0.0
    while tick <= end + 1e-9:
        x = LEFT + tick * scale
        out.append(f'<line x1="{x:.2f}" y1="{TOP}" x2="{x:.2f}" y2="{axis}" stroke="#bbb" stroke-width="0.5"/>')
        out.append(f'<text x="{x:.2f}" y="{axis + 14}" text-anchor="middle">{tick:g} s</text>')
        tick += step
    x = LEFT
    for stage, colour in STAGES:
        out.append(f'<rect x="{x}" y="{axis + 26}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{x + 16}" y="{axis + 36}">{stage}</text>')
        x += 30 + 7 * len(stage)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records")
    parser.add_argument("out")
    parser.add_argument("--sectors", type=int)
    parser.add_argument("--run", type=int)
    args = parser.parse_args()
    with open(args.records) as f:
        records = [json.loads(line) for line in f if line.strip()]
    with open(args.out, "w") as f:
        f.write(svg(pick(records, args.sectors, args.run)))


if __name__ == "__main__":
    main()
