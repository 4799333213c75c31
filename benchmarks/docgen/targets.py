"""The targets the issues set for the RL benchmark (issue 40), each judged from rl.json's rows. The
block benchmark's targets (issue 41) are judged by labkit.bench.block_tables.targets while notebook
13 still imports its wording of the missed ones from there."""
from __future__ import annotations

S_MODE_ACCURACY, S_MODE_HARD, S_MODE_TPF = 0.95, 0.90, 7       # S mode after RL, on every held-out puzzle
EDITS_FIXED_PER_BROKEN = 5
ORDER_DROP = -0.005                  # the confident orders after RL, at most this below tiny-sudoku's
CONFIDENT_ORDERS = ("low-confidence", "margin", "entropy")


def rl_targets(after: list[dict], before: list[dict], ar_after: dict | None) -> dict:
    """RL's targets on the held-out puzzles, each {target, value, met}: `after` and `before` are the
    masked model's rows (run_pair) after and before RL, `ar_after` the AR twin's row after RL."""
    acc = {r["label"]: r["tasks"]["sudoku"] for r in after}
    base = {r["label"]: r["tasks"]["sudoku"] for r in before}
    s = acc["S mode"]
    edits = s.get("edits", {"fixed": 0, "broke": 0})
    ratio = edits["fixed"] / max(1, edits["broke"])
    rivals = [(m, label, v) for m, rows in (("rl", acc), ("start", base)) for label, v in rows.items()
              if label.startswith(("threshold", "factor")) and v["tpf"] >= s["tpf"] and v["accuracy"] > s["accuracy"]]
    orders = {label: round(acc[label]["accuracy"] - base[label]["accuracy"], 4) for label in CONFIDENT_ORDERS}
    return {
        "s_mode_overall": {"target": f">= {S_MODE_ACCURACY}", "value": s["accuracy"],
                           "met": s["accuracy"] >= S_MODE_ACCURACY},
        "s_mode_hard": {"target": f">= {S_MODE_HARD:.2f}", "value": s["groups"]["hard"]["accuracy"],
                        "met": s["groups"]["hard"]["accuracy"] >= S_MODE_HARD},
        "s_mode_tpf": {"target": f">= {S_MODE_TPF}", "value": s["tpf"], "met": s["tpf"] >= S_MODE_TPF},
        "edits_fixed_per_broken": {"target": f">= {EDITS_FIXED_PER_BROKEN}", "value": round(ratio, 2),
                                   "met": ratio >= EDITS_FIXED_PER_BROKEN},
        "s_mode_on_frontier": {"target": "no threshold/factor rule on either model more accurate at >= its TPF",
                               "value": [f"{m}: {label} {v['accuracy']} at {v['tpf']}" for m, label, v in rivals],
                               "met": not rivals},
        "confident_orders_kept": {"target": f">= {ORDER_DROP} each (RL model minus tiny-sudoku)", "value": orders,
                                  "met": all(v >= ORDER_DROP for v in orders.values())},
        "ar_twin": {"target": "reported", "value": ar_after["tasks"]["sudoku"]["accuracy"] if ar_after else None,
                    "met": ar_after is not None},
    }


def judge_rl(result: dict) -> dict:
    """rl.json's targets from its rows (the RL model's, tiny-sudoku's, the AR twin's after RL)."""
    runs = result["runs"]
    return rl_targets(runs["rl"], runs["start"], runs["ar_rl"])
