"""Plots bench/bound_ratio_table's CSV: real over bound for the data-dependent
operators' tables and peaks, against the threshold's quantile.

    build/bench/bound_ratio_table > ratio.csv
    python3 bench/plot_bound_ratio.py ratio.csv docs/figures/bound_ratio.png
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source: str, target: str) -> None:
    with open(source, newline="") as f:
        rows = list(csv.DictReader(f))
    q = [float(r["quantile"]) for r in rows]

    def ratio(real: str, bound: str):
        return [max(float(r[real]) / float(r[bound]), 1e-7) for r in rows]

    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(q, ratio("picks", "picks_bound"), "o-", label="event_picks: rows of the table")
    ax.plot(q, ratio("picks_peak", "picks_peak_bound"), "o--", label="event_picks: peak")
    ax.plot(q, ratio("bodies", "bodies_bound"), "s-", label="geobodies: bodies (statistics rows)")
    ax.plot(q, ratio("bodies_peak", "bodies_peak_bound"), "s--", label="geobodies: peak")
    ax.set_yscale("log")
    ax.set_xlabel("threshold (quantile of the cube's amplitude)")
    ax.set_ylabel("real / planned bound")
    ax.set_title("Data-dependent operators: what they use against what the plan reserves")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_bound_ratio.py RATIO.csv OUT.png")
    main(sys.argv[1], sys.argv[2])
