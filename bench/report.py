"""Combines the results of bench/run.sh into bench/results/bench.json and a bar chart,
bench/results/bench.png, and prints where Þund stands against each target.

    python3 bench/report.py [--sf 1]

Reads bench/results/tpch_sf<SF>.json, refresh_sf<SF>.json, streaming.json and scale.json
(whichever exist).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess

from common import RESULTS, ROOT, table

NATIVE = "thund native"


def load(name):
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def machine():
    mem_kib = next((int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1), "platform": platform.platform(),
            "commit": commit, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def targets(tpch, streaming, scale):
    """(target, measured, met?) rows for the goals bench/README.md lists."""
    out = []
    if tpch:
        s = tpch["systems"]
        native = s[NATIVE]

        def at_least(other, threshold, label):
            """The other system's wall time over Þund's must be at least `threshold`."""
            if other in s:
                r = s[other]["wall_s"] / native["wall_s"]
                out.append([label, f"{r:.2f}×", "yes" if r >= threshold else "no"])

        sf = tpch["sf"]
        at_least("duckdb → parquet", 1.0, f"no slower than DuckDB: its wall / Þund's ≥ 1.00 (SF {sf})")
        at_least("raw datafusion → parquet", 1 / 1.1, f"within 1.1× of raw DataFusion: its wall / Þund's ≥ 0.91 (SF {sf})")
        goal = 14 if float(sf) >= 1 else 25
        at_least("spark-pipelines", goal, f"Spark SDP wall / Þund's ≥ {goal} (SF {sf})")
        if float(tpch["sf"]) >= 1:
            rss = native["peak_rss_mib"]
            out.append(["Þund peak RSS ≤ 1024 MiB (SF 1)", f"{rss:.0f} MiB", "yes" if rss <= 1024 else "no"])
    if streaming:
        for name, p in streaming["pipelines"].items():
            r = p["incremental_ratio"]
            out.append([f"incremental +1% ≤ 5% of full refresh ({name})", f"{r * 100:.1f}%", "yes" if r <= 0.05 else "no"])
    if scale and "1000" in scale["validate"]:
        w = scale["validate"]["1000"]["wall_s"]
        out.append(["thund validate, 1,000 datasets < 1 s", f"{w * 1e3:.0f} ms", "yes" if w < 1 else "no"])
    if scale and "10000" in scale["validate"]:
        m = scale["validate"]["10000"]["peak_rss_mib"]
        out.append(["thund validate, 10,000 datasets < 150 MiB", f"{m:.0f} MiB", "yes" if m < 150 else "no"])
    if scale and "binary_mib" in scale:
        m = scale["binary_mib"]
        out.append(["release binary < 200 MiB", f"{m:.0f} MiB", "yes" if m < 200 else "no"])
    refresh = next((r for r in [load(f"refresh_sf{tpch['sf']}") if tpch else None, load("refresh_sf1")] if r), None)
    if refresh:
        views = refresh["views"]
        share = refresh["incremental_views"] / max(len(views), 1)
        out.append([f"materialized views refreshed incrementally, {refresh['change']:.0%} changed (SF {refresh['sf']})",
                    f"{refresh['incremental_views']} of {len(views)}", "yes" if share == 1 else "no"])
        for name, v in views.items():
            out.append([f"refresh ≤ 10% of a full recompute: {name} ({(v['technique'] or '?').lower()})",
                        f"{v['ratio'] * 100:.1f}%", "yes" if v["ratio"] <= 0.10 else "no"])
    log = load("event_log")
    if log:
        n = f"{log['events'] / 1e6:.1f}M events"
        first = log["ui_first_state"]
        out.append([f"thund ui first state ≤ 1 s ({n})", f"{first['wall_s'] * 1e3:.0f} ms",
                    "yes" if first["wall_s"] <= 1 else "no"])
        out.append([f"thund ui peak RSS ≤ 300 MiB ({n})", f"{log['ui_peak_rss_mib']:.0f} MiB",
                    "yes" if log["ui_peak_rss_mib"] <= 300 else "no"])
        last = log["events_last"]["wall_s"]
        out.append([f"thund events --last ≤ 1 s ({n})", f"{last * 1e3:.0f} ms", "yes" if last <= 1 else "no"])
    return out


def chart(tpch, streaming, scale, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    fig, grid = plt.subplots(2, 2, figsize=(13, 8.5))
    (wall_ax, rss_ax), (stream_ax, scale_ax) = grid
    colour = lambda name: "#c8553d" if name == NATIVE else "#5b8fb9"
    if tpch:
        names = list(tpch["systems"])
        walls = [tpch["systems"][n]["wall_s"] for n in names]
        base = tpch["systems"][NATIVE]["wall_s"]
        bars = wall_ax.barh(names, walls, color=[colour(n) for n in names])
        for b, w in zip(bars, walls):
            wall_ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {w:.1f} s ({w / base:.2f}×)", va="center", fontsize=8)
        wall_ax.invert_yaxis()
        wall_ax.set_xscale("log")
        wall_ax.xaxis.set_major_formatter(ScalarFormatter())
        wall_ax.set_xlim(right=max(walls) * 4)
        wall_ax.set_xlabel(f"wall time, s (log scale; median of {tpch['runs']})")
        wall_ax.set_title(f"TPC-H medallion, SF {tpch['sf']}: wall time (× Þund native)")
        rss = [tpch["systems"][n]["peak_rss_mib"] for n in names]
        rss_ax.barh(names, rss, color=[colour(n) for n in names])
        rss_ax.invert_yaxis()
        rss_ax.axvline(1024, color="grey", linestyle="--", linewidth=1)
        rss_ax.set_xlabel("peak RSS of the client process, MiB (dashed: 1 GiB)")
        rss_ax.set_title("peak memory")
    if streaming:
        kinds = [("full_refresh_s", "full refresh"), ("incremental_1pct_s", "+1% files"), ("idle_s", "idle")]
        pipes = list(streaming["pipelines"])
        width = 0.8 / len(kinds)
        for k, (key, label) in enumerate(kinds):
            values = [streaming["pipelines"][p][key] for p in pipes]
            xs = [i + k * width for i in range(len(pipes))]
            stream_ax.bar(xs, values, width, label=label, color=["#c8553d", "#e9a178", "#f3d3bd"][k])
            for x, v in zip(xs, values):
                stream_ax.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
        stream_ax.set_xticks([i + width for i in range(len(pipes))], pipes, fontsize=8)
        stream_ax.set_ylabel("wall time, s")
        stream_ax.legend(fontsize=8)
        stream_ax.set_title(f"streaming, SF {streaming['sf']}: full vs incremental")
    if scale:
        sizes = list(scale["validate"])
        scale_ax.plot([int(n) for n in sizes], [scale["validate"][n]["wall_s"] * 1e3 for n in sizes], marker="o", color="#c8553d")
        for n in sizes:
            scale_ax.annotate(f"{scale['validate'][n]['wall_s'] * 1e3:.0f} ms", (int(n), scale["validate"][n]["wall_s"] * 1e3),
                              textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
        scale_ax.set_xscale("log")
        scale_ax.set_yscale("log")
        scale_ax.set_xlabel("datasets")
        scale_ax.set_ylabel("thund validate, ms")
        scale_ax.set_title("front end at scale: thund validate")
    for ax in grid.flat:
        if not ax.has_data():
            ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", default="1")
    args = ap.parse_args()
    tpch, streaming, scale = load(f"tpch_sf{args.sf}"), load("streaming"), load("scale")
    goals = targets(tpch, streaming, scale)
    combined = {"machine": machine(), "tpch": tpch, "streaming": streaming, "scale": scale,
                "targets": [{"target": t, "measured": m, "met": ok == "yes"} for t, m, ok in goals]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "bench.json").write_text(json.dumps(combined, indent=2) + "\n")
    chart(tpch, streaming, scale, RESULTS / "bench.png")
    if goals:
        print(table(goals, ["target", "measured", "met"]))
    print(f"written {RESULTS / 'bench.json'} and {RESULTS / 'bench.png'}")


if __name__ == "__main__":
    main()
