"""Plots a leaderboard's board.json: each estimator's relative error against
its cost per estimate, one panel per split (the median as a marker, the p95
as the whisker's end; an estimate that under-predicts is circled in red by
its share of runs).

    build/apps/dwsr/dwsr leaderboard run --suite full -o lb
    python3 bench/plot_leaderboard.py lb/board.json docs/figures/leaderboard.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(source: str, target: str) -> None:
    with open(source) as f:
        board = json.load(f)
    rows = board["rows"]
    splits = list(dict.fromkeys(r["split"] for r in rows))
    estimators = list(dict.fromkeys(r["estimator"] for r in rows))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 4.4), sharey=True)
    for ax, split in zip(axes, splits):
        for k, name in enumerate(estimators):
            r = next(r for r in rows if r["split"] == split and r["estimator"] == name)
            cost = max(r["seconds_per_estimate"] * 1e6, 1e-3)
            median, p95 = 100 * r["median_rel_error"], 100 * r["p95_rel_error"]
            ax.errorbar([cost], [median], yerr=[[0], [max(p95 - median, 0)]], fmt="o", color=colors[k], capsize=4,
                        label=name)
            if r["under_rate"] > 0:
                ax.scatter([cost], [median], s=300 * r["under_rate"] + 60, facecolors="none", edgecolors="red")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1)
        ax.set_xlabel("cost per estimate (us)")
        ax.set_title(f"{split} split ({r['test_runs']} test runs)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("relative error (%): median, whisker to p95")
    fig.suptitle(f"dwsr leaderboard, suite {board['suite']} (seed {board['seed']}): estimates against peak RSS; "
                 "red ring: runs under-predicted (larger, more)")
    # One legend below the panels: an estimator near zero error sits where a legend inside would cover it.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(estimators), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(target, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_leaderboard.py BOARD_JSON PNG")
    main(sys.argv[1], sys.argv[2])
