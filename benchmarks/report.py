"""docs/benchmarks.md and its plots, from benchmarks/results/live.json, move_cost.json,
ping_cost.json and forwarding.json.

    python -m benchmarks.report

Run by `make bench-live` after each measurement; it only reads results, so it can be run again
by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
PLOTS = ROOT / "docs" / "benchmarks"
# What stands above this line in docs/benchmarks.md is written by people (what the figures
# say) and kept; what is below is made again from the results.
MARKER = "<!-- The rest of this page is made by python -m benchmarks.report. -->"


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_latency(runs_set: dict, path: Path) -> None:
    plt = _figure()
    runs = runs_set["runs"]
    x = [run["matches"] for run in runs]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for key, label, style in (
        ("ack_ms", "move ack", "-o"),
        ("broadcast_ms", "broadcast", "-s"),
        ("echo_layer_ms", "echo (a): channel layer", "--^"),
        ("echo_bare_ms", "echo (b): bare ASGI", ":v"),
    ):
        for quantile, alpha in (("p50", 1.0), ("p99", 0.45)):
            ax.plot(x, [run[key][quantile] for run in runs], style, alpha=alpha,
                    label=f"{label} {quantile}")  # fmt: skip
    ax.set_xlabel("concurrent matches")
    ax.set_ylabel("ms")
    ax.set_yscale("log")
    if len(x) > 1:
        ax.set_xscale("log")
    ax.set_title(f"Latency at a human pace ({_describe(runs_set)})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    _save(plt, fig, path)


def plot_cpu(runs_set: dict, path: Path) -> None:
    plt = _figure()
    runs = runs_set["runs"]
    names = sorted({name for run in runs for name in run["cpu"]})
    fig, ax = plt.subplots(figsize=(8, 4.5))
    bottoms = [0.0] * len(runs)
    labels = [str(run["matches"]) for run in runs]
    for name in names:
        values = [run["cpu"].get(name, 0.0) for run in runs]
        ax.bar(labels, values, bottom=bottoms, label=name)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    ax.set_xlabel("concurrent matches")
    ax.set_ylabel("% of one core")
    ax.set_title(f"CPU per process ({_describe(runs_set)})")
    ax.legend(fontsize=7, ncol=3)
    _save(plt, fig, path)


def plot_forfeits(runs_set: dict, path: Path) -> None:
    plt = _figure()
    runs = [run for run in runs_set["runs"] if run["forfeit_late_ms"]["n"]]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = [run["matches"] for run in runs]
    for key, style in (("p50", "-o"), ("p99", "-s"), ("max", ":^")):
        ax.plot(x, [run["forfeit_late_ms"][key] for run in runs], style, label=key)
    ax.axhline(25, color="grey", linestyle="--", linewidth=1, label="25 ms")
    ax.set_xlabel("concurrent matches")
    ax.set_ylabel("ms from the deadline to the client's receipt")
    ax.set_title("Forfeit lateness")
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(plt, fig, path)


def plot_move_cost(move_cost: dict, path: Path) -> None:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(8, 4))
    before = move_cost.get("before")
    series = (("before (record rewritten)", before), ("now (events as rows)", move_cost))
    for label, costs in series:
        if costs:
            rounds = sorted(int(n) for n in costs["move_ms_by_round"])
            by_round = costs["move_ms_by_round"]
            ax.plot(rounds, [by_round[str(n)] for n in rounds], "-o", markersize=3, label=label)
    ax.axvspan(30, 44, color="orange", alpha=0.15, label="rounds 30-44")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("round")
    ax.set_ylabel("median ms per command")
    ax.set_title(f"A move's cost in the match service by round ({move_cost['database']})")
    ax.grid(True, alpha=0.3)
    ax.legend()
    _save(plt, fig, path)


def _save(plt, fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _describe(runs_set: dict) -> str:
    return (
        f"{runs_set['database']}, {runs_set['web_processes']} web processes, "
        f"{runs_set['channel_layer']} layer"
        + (f", {shards} shards" if (shards := runs_set.get("channel_layer_shards", 1)) > 1 else "")
    )


def _q(value) -> str:
    return "—" if value is None else f"{value:g}"


def _table(runs_set: dict) -> list[str]:
    lines = [
        "| matches | commands/s (resyncs) | ack p50 / p99 | broadcast p50 / p99 "
        "| echo (a) p50 / p99 | echo (b) p50 / p99 | ack p50 ÷ echo (a) p50 "
        "| forfeits: n, p50 / p99 / max, early "
        "| CPU (% of a core) | errors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs_set["runs"]:
        ack, cast = run["ack_ms"], run["broadcast_ms"]
        layer, bare, late = run["echo_layer_ms"], run["echo_bare_ms"], run["forfeit_late_ms"]
        ratio = ack["p50"] / layer["p50"] if ack["p50"] and layer["p50"] else None
        cpu = ", ".join(f"{name} {pct:g}" for name, pct in sorted(run["cpu"].items()))
        errors = ", ".join(f"{code} {n}" for code, n in sorted(run["errors"].items())) or "none"
        resyncs = f" ({run['resyncs']})" if "resyncs" in run else ""  # not counted before 12-04
        lines.append(
            f"| {run['matches']} | {run['commands_per_s']}{resyncs} "
            f"| {_q(ack['p50'])} / {_q(ack['p99'])} | {_q(cast['p50'])} / {_q(cast['p99'])} "
            f"| {_q(layer['p50'])} / {_q(layer['p99'])} "
            f"| {_q(bare['p50'])} / {_q(bare['p99'])} | {_q(ratio and round(ratio, 2))} "
            f"| {late['n']}, {_q(late['p50'])} / {_q(late['p99'])} / {_q(late['max'])}, "
            f"{late['early']} | {cpu} | {errors} |"
        )
    return lines + _details(runs_set)


def _details(runs_set: dict) -> list[str]:
    """What runs measured since 2026-12-07 add: the machine's busy and stolen shares, and the
    acks of each kind of command (each takes its own path: a contribution may deal a round)."""
    lines = []
    for run in runs_set["runs"]:
        if not (machine := run.get("machine_cpu")):
            continue
        kinds = ", ".join(
            f"{kind} {_q(ack['p50'])} / {_q(ack['p99'])}"
            for kind, ack in run.get("ack_ms_by_kind", {}).items()
        )
        lines.append(
            f"- {run['matches']} matches: the machine {machine['busy']:g}% busy, "
            f"{machine['steal']:g}% stolen by other guests; ack p50 / p99 by command: {kinds}."
        )
    return ["", *lines] if lines else []


def write() -> Path:
    live, move_cost = _load("live.json"), _load("move_cost.json")
    PLOTS.mkdir(parents=True, exist_ok=True)
    written = DOC.read_text() if DOC.exists() else ""
    kept = written.split(MARKER)[0].rstrip("\n") if MARKER in written else ""
    lines = [kept, "", MARKER, ""] if kept else ["# Benchmarks of the live service", ""]
    lines += [
        "Made by `make bench-live` (benchmarks/live_bench.py, then benchmarks/report.py) and",
        "`make bench` (benchmarks/move_cost_bench.py) on this project's 2-core machine. Each",
        "figure stands beside the floor measured in the same run: echo (a) is `ws/echo/` through",
        "the channel layer on the same web processes, echo (b) a bare ASGI echo on a Daphne of",
        "its own. The bots play at a human pace (2-4 s before each decision, a ping every 5 s)",
        "from processes of their own on the same machine, so their CPU is in the figures too.",
        "",
    ]
    for runs_set in (live or {}).get("sets", []):
        slug = runs_set["label"] or f"{runs_set['database']}-{runs_set['channel_layer']}"
        lines += [f"## {slug}: {_describe(runs_set)}", ""]
        lines += [f"Measured {runs_set['measured_at']}.", ""]
        lines += _table(runs_set) + [""]
        for kind, plot in (("latency", plot_latency), ("cpu", plot_cpu)):
            name = f"live-{slug}-{kind}.png"
            plot(runs_set, PLOTS / name)
            lines += [f"![{kind}](benchmarks/{name})", ""]
        if any(run["forfeit_late_ms"]["n"] for run in runs_set["runs"]):
            name = f"live-{slug}-forfeits.png"
            plot_forfeits(runs_set, PLOTS / name)
            lines += [f"![forfeits](benchmarks/{name})", ""]
    if move_cost:
        plot_move_cost(move_cost, PLOTS / "move-cost.png")
        match = move_cost["match"]
        lines += [
            "## A move's cost against the round number",
            "",
            f"One match of {match['rounds']} rounds ({match['commands']} commands) through",
            f"`services.match_submit` on {move_cost['database']}: a move costs",
            f"{move_cost['move_ms_round_1']} ms in round 1 and {move_cost['move_ms_rounds_30_44']}",
            f"ms in rounds 30-44 (median), a ratio of {move_cost['ratio_30_44_to_1']}.",
            "",
        ]
        if before := move_cost.get("before"):
            lines += [
                f"Before (commit {before['commit']}, {before['note']}): "
                f"{before['move_ms_round_1']} ms in round 1, "
                f"{before['move_ms_rounds_30_44']} ms in rounds 30-44, "
                f"a ratio of {before['ratio_30_44_to_1']}. py-spy of the whole run: "
                "benchmarks/results/profiles/move_cost_before.json and move_cost_after.json "
                "(the share of samples spent encoding or decoding JSON, `json_share`).",
                "",
            ]
        lines += [
            "![move cost](benchmarks/move-cost.png)",
            "",
        ]
    if ping_cost := _load("ping_cost.json"):
        lines += _ping_cost_lines(ping_cost)
    if forwarding := _load("forwarding.json"):
        lines += _forwarding_lines(forwarding)
    DOC.write_text("\n".join(lines))
    return DOC


def _ping_cost_lines(ping: dict) -> list[str]:
    return [
        "## What a ping costs a web process",
        "",
        f"`make bench`'s `ping_cost` (benchmarks/ping_cost_bench.py): {ping['matches_open']:,}",
        f"matches open in one web process, {ping['pings_per_s']:.0f} pings a second, the median",
        f"of {ping['rounds']} alternated rounds of CPU time. Asked of Redis (a round trip per",
        f"ping): {ping['asked_us_per_ping']} µs a ping. Answered from the process's last reading",
        f"(matches/readings.py): {ping['remembered_us_per_ping']} µs, plus",
        f"{ping['refresh_us_per_ping']} µs a ping for the reading itself",
        f"({ping['refresh_us']} µs twice a second): {ping['remembered_with_refresh_us_per_ping']}",
        f"µs in all, a ratio of {ping['ratio_remembered_to_asked']}.",
        "",
    ]


def _forwarding_lines(bench: dict) -> list[str]:
    queued, forwarded = bench["queued"], bench["forwarded"]
    busy = bench["busy_loop"]
    return [
        "## A broadcast's wait in a busy web process",
        "",
        "`make bench`'s `forwarding` (benchmarks/forwarding_bench.py): "
        f"{bench['sockets_each_way']} sockets",
        "each way in one process, on a real Redis and the pub/sub layer, the two ways alternated",
        f"{bench['rounds']} times. The event loop kept busy ({busy['tasks']} tasks running",
        f"{busy['us_each_per_turn']} µs each every turn), the wait from a broadcast's `PUBLISH` to",
        "its frame handed to the socket: through Channels' queue and dispatch, p50",
        f"{queued['wait_ms']['p50']} / p99 {queued['wait_ms']['p99']} ms; taken as read",
        f"(realtime/forwarding.py), p50 {forwarded['wait_ms']['p50']} / p99",
        f"{forwarded['wait_ms']['p99']} ms: ratios {bench['ratio_wait_p50_forwarded_to_queued']}",
        f"and {bench['ratio_wait_p99_forwarded_to_queued']}. CPU a broadcast, its publishing",
        f"included: {queued['cpu_us_per_broadcast']} µs queued,",
        f"{forwarded['cpu_us_per_broadcast']} µs taken as read, a ratio of",
        f"{bench['ratio_cpu_forwarded_to_queued']}.",
        "",
    ]


if __name__ == "__main__":
    print(f"wrote {write()}")
