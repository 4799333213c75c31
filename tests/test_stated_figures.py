"""Figures stated in prose against the stored results they describe.

Each test reads a figure twice: from the prose (README.md, docs/benchmarks.md, a notebook's markdown)
and from its source (a committed JSON under benchmarks/results/, or a notebook's stored output), so
that editing one without the other fails. Notebooks are read with nbformat, never executed; prose is
compared with its line breaks folded into spaces. Cells are found by what they say, not by index.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NOTEBOOKS = ROOT / "notebooks"


# ---------------------------------------------------------------- reading prose and sources

def result(name: str):
    return json.loads((RESULTS / name).read_text())


def flat(text: str) -> str:
    """Prose with its line breaks (and markdown list indents) folded into single spaces."""
    return re.sub(r"\s+", " ", text)


def section(text: str, heading: str) -> str:
    """A markdown section: from `heading` to the next heading of the same level."""
    level = heading.split(" ", 1)[0]
    part = text.split(heading + "\n", 1)[1]
    return re.split(rf"\n{level} ", part, maxsplit=1)[0]


def readme() -> str:
    return (ROOT / "README.md").read_text()


def docs_benchmarks() -> str:
    return (ROOT / "docs" / "benchmarks.md").read_text()


def notebook(name: str):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def markdown(nb, anchor: str) -> str:
    """The one markdown cell that contains `anchor`, folded."""
    cells = [c.source for c in nb.cells if c.cell_type == "markdown" and anchor in c.source]
    assert len(cells) == 1, f"{len(cells)} markdown cells contain {anchor!r}"
    return flat(cells[0])


def code_cell(nb, anchor: str):
    cells = [c for c in nb.cells if c.cell_type == "code" and anchor in c.source]
    assert len(cells) == 1, f"{len(cells)} code cells contain {anchor!r}"
    return cells[0]


def output(nb, anchor: str) -> str:
    """The stored text output (streams and plain-text results) of the one code cell with `anchor`."""
    parts = []
    for o in code_cell(nb, anchor).get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif "data" in o and "text/plain" in o.data:
            parts.append(o.data["text/plain"])
    text = "".join(parts)
    assert text, f"the cell with {anchor!r} has no stored text output"
    return text


def says(prose: str, *figures: str) -> None:
    for figure in figures:
        assert figure in prose, f"prose does not state {figure!r}:\n{prose}"


def notebook_numbers(text: str) -> set[str]:
    """{"01", "06"} from "notebooks 01 and 06" (or "notebooks 02, 03 and 11")."""
    m = re.search(r"notebooks? ((?:\d\d(?:, | and )?)+)", text)
    assert m, f"no notebook list in {text!r}"
    return set(re.findall(r"\d\d", m.group(1)))


def notebook_path(number: str) -> Path:
    (path,) = NOTEBOOKS.glob(f"{number}_*.ipynb")
    return path


# ---------------------------------------------------------------- 1. README's defaults

def test_readme_defaults_are_labkit_defaults_and_name_the_notebooks_that_sample():
    from labkit import defaults
    from labkit.samplers import registry

    rows = [ln for ln in section(readme(), "## Defaults, in one place").splitlines() if ln.startswith("| ")]
    sampled = next(r for r in rows if "`lk.defaults.sampler()`" in r.split("|")[1])
    greedy = next(r for r in rows if "0, greedy" in r)
    says(sampled, f"{defaults.TEMPERATURE} within the {defaults.TOP_P} nucleus")
    assert defaults.sampler().temperature == defaults.TEMPERATURE and defaults.sampler().top_p == defaults.TOP_P
    # a rule made without a temperature (no sampler, a rule's name, the panel's default) is greedy
    assert all(registry.rule(name).temperature == 0 for name in registry.names())

    calls_default = {p.name[:2] for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")
                     if any("lk.defaults.sampler()" in c.source for c in nbformat.read(p, as_version=4).cells
                            if c.cell_type == "code")}
    said_sampled, said_greedy = notebook_numbers(sampled), notebook_numbers(greedy)
    assert said_sampled == calls_default, (said_sampled, calls_default)
    assert not said_greedy & calls_default
    # a notebook said to decode greedily sets no other temperature, unless the note below the table says so
    note = flat(section(readme(), "## Defaults, in one place").split("|\n\n", 1)[1].split("\n\n", 1)[0])
    for number in sorted(said_greedy | {"10"}):
        cells = nbformat.read(notebook_path(number), as_version=4).cells
        code = "\n".join(c.source for c in cells if c.cell_type == "code")
        for value in sorted({v for v in re.findall(r"temperature=([\d.]+)", code) if float(v) > 0}):
            assert f"otebook {number}" in note and f" {value}" in note, (number, value, note)

    # notebook 01 prints its sampler: the stored printout is the default's temperature and nucleus
    printed = output(notebook("01_quickstart.ipynb"), "sampler = lk.defaults.sampler()")
    says(printed, f"temperature={defaults.TEMPERATURE}", f"top_p={defaults.TOP_P}")


# ---------------------------------------------------------------- 2, 9. notebook 01

def test_nb01_confidence_prose_reads_its_printout():
    nb = notebook("01_quickstart.ipynb")
    printed = output(nb, "per_step[32 * b")
    blocks = re.findall(r"block (\d): mean confidence of the commits, first 16 steps ([\d.]+), "
                        r"last 16 steps ([\d.]+)", printed)
    first_steps = re.search(r"steps 0-7: \[([^\]]*)\]", printed).group(1).split(", ")
    assert len(blocks) == 2 and len(first_steps) == 8
    prose = markdown(nb, "The **confidence heatmap**")
    says(prose, f"{first_steps[0]} and {first_steps[1]} at steps 0 and 1",
         f"({blocks[0][1]} and {blocks[1][1]})", f"({blocks[0][2]} and {blocks[1][2]})")
    assert all(float(first) > float(last) for _, first, last in blocks)      # "confidence still falls"
    assert "surest tokens first" not in prose        # the run samples: the first commits are not sure

    sampler = re.search(r"temperature=([\d.]+).*?top_p=([\d.]+)",
                        output(nb, "sampler = lk.defaults.sampler()")).groups()
    says(prose, f"`temperature={sampler[0]}`", f"top-p {sampler[1]}")


def test_nb01_exercises_leave_the_fixed_slices_working():
    nb = notebook("01_quickstart.ipynb")
    summary = code_cell(nb, "per_step[32 * b").source
    blocks = int(re.search(r"for b in range\((\d+)\)", summary).group(1))
    per_block = int(re.search(r"per_step\[(\d+) \* b", summary).group(1))
    stored = output(nb, "sampler = lk.defaults.sampler()")
    assert f"'steps': {blocks * per_block}" in stored        # the slices fit the stored run
    solutions = [c.source for c in nb.cells if c.cell_type == "code" and "# Solution" in c.source]
    assert len(solutions) == 3
    for source in solutions:                                   # a solution never changes `settings`,
        assert not re.search(r"settings\[[^]]+\]\s*=|settings\s*=", source)   # so the summary keeps its slices
    assert '{**settings, "steps": 16}' in solutions[0]


# ---------------------------------------------------------------- 7. notebook 02

def test_nb02_block_order_prose_reads_its_printout():
    nb = notebook("02_step_through.ipynb")
    printed = output(nb, "for block in (64, 32, 8)")
    rho = dict(re.findall(r"block_length\s+(\d+):.*?rank correlation position↔step ([+-][\d.]+)", printed))
    assert set(rho) == {"64", "32", "8"}
    prose = markdown(nb, "What blocks do show")
    says(prose, f"{rho['64']} (one block)", f"{rho['32']} (blocks of 32)", f"{rho['8']} (blocks of 8")
    if abs(float(rho["8"])) == 1.0:           # a rounded +1.00 does not show a strict order
        says(prose, "rounded")
        assert "strictly left to right" not in prose


# ---------------------------------------------------------------- 6, 9. notebook 03

def _ratio(rows: dict, name: str) -> float:
    return rows[name]["gen_ppl"] / rows["low_confidence_1tok"]["gen_ppl"]


def test_nb03_saved_run_prose_reads_samplers_and_recipe_sweep():
    saved = result("samplers.json")
    cap = saved["cap"]
    sweep = {e["name"]: e for e in result("recipe_sweep.json")}
    prose = markdown(notebook("03_parallel_decoding.ipynb"), "What the saved run says")

    # the tiny-cap frontier: TPF to one decimal, gen-PPL relative to 1 token as in the table
    for phrase, rule in (("the entropy bound commits {tpf} tokens per forward at {x}×", "entropy_bound"),
                         ("τ 0.95 {tpf} at {x}×", "threshold_0.95"), ("τ 0.93 {tpf} at {x}×", "threshold_0.93"),
                         ("τ 0.9 {tpf} at {x}×", "threshold_0.9"), ("the factor rule {tpf} at {x}×", "factor_1.0"),
                         ("Q mode {tpf} at {x}×", "draft_edit_quality"), ("S mode {tpf} at {x}×", "draft_edit_speed")):
        says(prose, phrase.format(tpf=f"{cap[rule]['tpf']:.1f}", x=f"{_ratio(cap, rule):.2f}"))

    # 5.65 is in the table beside the prose; 5.30 is not (its tiny rows are from fewer prompts)
    tiny_ref = sweep["tiny"]["rows"]["low_confidence_1tok"]
    assert cap["low_confidence_1tok"]["prompts"] == tiny_ref["prompts"] == 96
    assert saved["low_confidence_1tok"]["prompts"] != 96
    says(prose, f"score {cap['low_confidence_1tok']['gen_ppl']:.2f} (the table above)",
         f"against {tiny_ref['gen_ppl']:.2f} for `tiny`",
         f"whose `tiny` rows come from {saved['low_confidence_1tok']['prompts']} prompts",
         "`tiny` entry of `benchmarks/results/recipe_sweep.json`")

    # the stutter training: previous tiny-cap in recipe_sweep.json, the current one in samplers.json
    before = sweep["tiny-cap"]["ratio"]
    says(prose, f"S mode from {before['draft_edit_speed']:.2f}× to {_ratio(cap, 'draft_edit_speed'):.2f}×",
         f"Q mode from {before['draft_edit_quality']:.2f}× to {_ratio(cap, 'draft_edit_quality'):.2f}×")

    # the sweep lives in docs/models.md, not in the README
    assert "README has the recipe sweep" not in prose
    says(prose, "`docs/models.md` has the recipe sweep")
    models = (ROOT / "docs" / "models.md").read_text()
    assert "recipe_sweep.json" in models and "recipe was chosen" in models
    assert "recipe_sweep.json" not in readme()


def test_nb03_things_to_try_suggest_a_rule_not_already_in_the_table():
    nb = notebook("03_parallel_decoding.ipynb")
    table = code_cell(nb, "def compare(model)").source
    compared = set(re.findall(r'"([\w.]+)": \(lk\.', table))
    assert "CAP_MODEL: compare(cap)" in table                  # tiny-cap is already in the table
    first = markdown(nb, "## Things to try").split(" 2. ", 1)[0]
    assert "MODEL = CAP_MODEL" not in first
    suggested = re.findall(r'"([\w.]+)": \(lk\.Threshold\(threshold=([\d.]+)\)', first)
    assert suggested and all(key not in compared and key == f"threshold_{tau}" for key, tau in suggested)


# ---------------------------------------------------------------- 9. notebook 04's pointer

def test_nb04_tiny_s_mode_pointer_reads_samplers_json_and_nb03():
    row = result("samplers.json")["draft_edit_speed"]                    # the tiny rows
    prose = markdown(notebook("04_draft_and_edit.ipynb"), "## Real edit events")
    says(prose, f"S mode commits {row['tpf']:.2f} tokens per forward pass",
         f"gen-PPL is {row['gen_ppl']:.0f}", "`draft_edit_speed` row of `tiny` in notebook 03")
    assert "notebook 02" not in prose                  # notebook 02 never runs S mode on `tiny`
    # notebook 03's stored table shows that row
    printed = output(notebook("03_parallel_decoding.ipynb"), "saved = json.loads(")
    tiny_table = printed.split("== tiny-cap", 1)[0]
    line = next(ln for ln in tiny_table.splitlines() if ln.startswith("draft_edit_speed "))
    says(line, f"{row['tpf']:.2f}", f"{row['gen_ppl']:.2f}")


# ---------------------------------------------------------------- 5. the panel: README and notebook 05

def _panel():
    p = result("panel.json")
    summary = {(s["candidate"], s["neighbour"]): s for s in p["summary"]}
    return p, summary


def _panel_target() -> float:
    cli = (ROOT / "labkit" / "cli" / "bench.py").read_text()
    return float(re.search(r"target: generate <= ([\d.]+) s", cli).group(1))


def test_readme_panel_table_and_prose_read_panel_json():
    p, summary = _panel()
    part = section(readme(), "## The lab panel")
    names = {"labkit's default": "labkit default", "torch's default: 2 threads": "torch default threads",
             "`OMP_WAIT_POLICY=PASSIVE`": "torch default + OMP passive"}
    rows = [ln for ln in part.splitlines() if ln.startswith("| ") and " s |" in ln]
    assert len(rows) == 3
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        cand = next(v for k, v in names.items() if k in cells[0])
        quiet, busy = summary[(cand, False)], summary[(cand, True)]
        assert cells[1] == f"{quiet['generate_median_s']:.2f} / {quiet['generate_max_s']:.2f} s", row
        assert cells[2] == f"{busy['generate_median_s']:.2f} / {busy['generate_max_s']:.2f} s", row
        assert cells[3] == f"{busy['first_press_max_s']:.1f} s", row

    prose = flat(part)
    target = _panel_target()
    quiet = [s for (c, busy), s in summary.items() if not busy]
    says(prose, f"the target is {target:g} s")
    if all(s["generate_median_s"] > target for s in quiet):
        says(prose, f"none of them met the {target:g} s target")
    spread = max(max(s["per_round"]) / min(s["per_round"]) - 1 for s in quiet)
    says(prose, f"moved by up to {100 * spread:.0f}% from round to round")
    says(prose, f"the slowest first press took {max(s['first_press_max_s'] for s in p['summary']):.0f} s",
         f"One thread stays within {summary[('labkit default', True)]['first_press_max_s']:.1f} s")

    live = p["live"]
    says(prose, f"Drawing the run live costs {100 * (live['cost_ratio'] - 1):.0f}% "
                f"({live['on']['generate_median_s']:.2f} s against {live['off']['generate_median_s']:.2f} s")
    s_mode = p["s_mode"]
    says(prose, f"takes {s_mode['generate_median_s']:.2f} s ({s_mode['steps']} steps)")
    scrub = statistics.median(r["scrub_median_s"] for r in p["rows"]
                              if r["candidate"] == "labkit default" and not r["neighbour"])
    says(prose, f"re-renders in {1000 * scrub:.0f} ms (median of the quiet one-thread rounds; "
                f"{1000 * s_mode['scrub_median_s']:.0f} ms on the {s_mode['steps']}-step S-mode run)")


def test_nb05_target_and_committed_median_agree_with_readme_and_panel_json():
    _, summary = _panel()
    target = _panel_target()
    quiet = summary[("labkit default", False)]["generate_median_s"]
    prose = markdown(notebook("05_lab_panel.ipynb"), "## How responsive is it?")
    says(prose, f"The target is {target:g} s for 64 tokens in 64 steps", f"measured a median of {quiet:.2f} s",
         "benchmarks/results/panel.json")
    if quiet > target:
        says(prose, "above the target")
    makefile = (ROOT / "Makefile").read_text()
    assert f"target ≤ {target:g} s for 64 tokens, 64 steps" in makefile


# ---------------------------------------------------------------- 4. the from-scratch likelihood row

def test_readme_scratch_row_points_to_notebook_10_not_one_run():
    part = section(readme(), "## A diffusion LM from scratch")
    row = next(ln for ln in part.splitlines() if ln.startswith("| ") and "from scratch" in ln)
    label = row.strip("|").split("|")[0]
    assert not re.search(r"\d[\d,]* steps|\d+ s\b", label), f"a run-specific budget in {label!r}"
    says(label, "notebook 10", "runs/scratch-masked")
    measured = result("likelihood_scratch.json")["models"]["runs/scratch-masked"]
    says(row, f"{measured[0]['bits_per_token']:.2f} ± {measured[0]['se']:.2f}")
    # the notebook's budget is not fixed (CI trains for less), so no one run's figures belong here
    budget = code_cell(notebook("10_train_from_scratch.ipynb"), "BUDGET =").source
    assert "LABKIT_SCRATCH_SECONDS" in budget


# ---------------------------------------------------------------- 3. labkit's overhead

def test_overhead_prose_reads_overhead_json():
    o = result("overhead.json")
    docs = flat(docs_benchmarks())
    bullet = docs.split("- `labkit bench overhead`", 1)[1].split(" - `labkit bench batch`", 1)[0]
    says(bullet, f"{o['full_s']:.3f} s through `generate()`", f"{o['bare_forward_s']:.3f} s as bare forward",
         f"a ratio of {o['labkit_overhead_ratio']:.3f}", f"{100 * o['overhead_share']:.1f}% of the wall time",
         f"against {o['no_trace_s']:.3f} s without it: {o['trace_overhead_ratio']:.3f}",
         f"median of {o['repeats']}")
    if o["meta"]["threads"] == 1:
        says(bullet, "one thread")
    for stale in ("1.043", "4.1%", "0.999"):
        assert stale not in bullet

    nb = notebook("07_profiling.ipynb")
    says(output(nb, 'RESULTS / "overhead.json"'), f"labkit_overhead_ratio {o['labkit_overhead_ratio']:.3f}",
         f"trace_overhead_ratio  {o['trace_overhead_ratio']:.3f}")
    prose = markdown(nb, "The rule, the bookkeeping and the trace together")
    says(prose, f"about {100 * o['overhead_share']:.0f}% of the wall time ({100 * o['overhead_share']:.1f}%)",
         f"(ratio {o['trace_overhead_ratio']:.3f})")
    if o["trace_overhead_ratio"] < 1.01:
        says(prose, "under 1%")


# ---------------------------------------------------------------- 8. notebook 07: length study and caches

def _by_length():
    return {r["length"]: r for r in result("length.json")["rows"]}


def test_length_prose_reads_length_json():
    rows = _by_length()
    secs = {n: {k: v["seconds"] for k, v in r.items() if isinstance(v, dict)} for n, r in rows.items()}
    ahead = [n for n in sorted(secs) if secs[n]["diffusion_threshold_cached"] < secs[n]["ar_cached"]]
    behind = [n for n in sorted(secs) if n not in ahead]
    assert ahead == sorted(secs)[:len(ahead)]                  # ahead up to some length, then behind
    x128 = secs[128]["ar_cached"] / secs[128]["diffusion_threshold_cached"]

    nb07 = markdown(notebook("07_profiling.ipynb"), "What the saved runs show on this CPU")
    docs = flat(docs_benchmarks())
    for prose in (nb07, docs):
        says(prose, f"{x128:.2f}× ")
        if behind:
            assert "at every length" not in prose
    says(nb07, f"is ahead of cached AR up to {max(ahead)} tokens")
    says(docs, f"cached diffusion wins up to {max(ahead)} tokens")
    for n in behind:
        pair = f"({secs[n]['diffusion_threshold_cached']:.2f} s against {secs[n]['ar_cached']:.2f} s"
        says(nb07, f"At {n} tokens it falls behind {pair}, with {rows[n]['diffusion_threshold_cached']['nfe']} "
                   f"forward passes)")
        says(docs, f"loses at {n} {pair})")
    # uncached threshold decoding against cached AR
    wins = [n for n in sorted(secs) if secs[n]["diffusion_threshold"] < secs[n]["ar_cached"]]
    says(docs, "threshold decoding only at " + ", ".join(
        f"{n} ({secs[n]['diffusion_threshold']:.2f} s against {secs[n]['ar_cached']:.2f} s)" for n in wins))
    # the notebook's stored table is the JSON's forward counts
    printed = output(notebook("07_profiling.ipynb"), 'RESULTS / "length.json"')
    says(printed, f"length 512:  512   512    32   {rows[512]['diffusion_threshold']['nfe']}   "
                  f"{rows[512]['diffusion_threshold_cached']['nfe']}")


def test_cache_speedups_say_which_setup_they_come_from():
    cache = result("cache.json")
    lc = cache["rules"]["low_confidence"]
    cpu = result("gpu_check_cpu.json")
    timed = cpu["comparisons"]["timed"]
    sec, vs = timed["seconds"], timed["speedup_vs_labkit_no_cache"]
    baseline = next(k for k, v in vs.items() if v == 1.0)
    assert baseline == "labkit_gpu"                         # the speed-ups are against the Accel.GPU run
    lo, hi = min(cache["prompt_tokens"]), max(cache["prompt_tokens"])
    nb = notebook("07_profiling.ipynb")

    runs = markdown(nb, "What the saved runs show on this CPU")
    says(runs, f"prompts of {lo} to {hi} tokens", "benchmarks/results/cache.json",
         f"the prefix cache decoded {lc['prefix']['speedup']:.1f}× faster",
         f"the dual cache {lc['dual']['speedup']:.1f}× faster")
    gpu = markdown(nb, "On the GPU, batching pays")
    says(gpu, f"against {lc['prefix']['speedup']:.1f} to {lc['dual']['speedup']:.1f}× for `tiny` on this CPU "
              "(`cache.json`")

    printed = output(nb, "def show_comparison(c)")
    says(printed, f"'labkit_prefix': {vs['labkit_prefix']}", f"'labkit_dual': {vs['labkit_dual']}")
    prose = markdown(nb, "The cache speed-ups printed above")
    says(prose, f"({vs['labkit_prefix']:.1f}× prefix, {vs['labkit_dual']:.1f}× dual)",
         f"a {cpu['params']:,}-parameter random model",
         f"a {timed['prompt_tokens']}-token prompt and {timed['gen_length']} answer tokens",
         f"uncached run with `Accel.GPU`, which took {sec[baseline]:.2f} s",
         f"against {sec['labkit']:.2f} s for the default loop",
         f"the cached runs are {sec['labkit'] / sec['labkit_prefix']:.1f}× and "
         f"{sec['labkit'] / sec['labkit_dual']:.1f}× faster",
         f"the {lc['prefix']['speedup']:.1f}× and {lc['dual']['speedup']:.1f}× that `labkit bench cache`",
         f"({lo}- to {hi}-token prompts")

    docs = flat(docs_benchmarks())
    says(docs, f"| prefix | {lc['prefix']['speedup']:.2f}× |", f"| dual | {lc['dual']['speedup']:.2f}× |",
         f"({lc['prefix']['speedup']:.2f}×, {lc['dual']['speedup']:.2f}×)")


@pytest.mark.parametrize("name", ["01_quickstart.ipynb", "02_step_through.ipynb", "03_parallel_decoding.ipynb",
                                  "04_draft_and_edit.ipynb", "05_lab_panel.ipynb", "07_profiling.ipynb"])
def test_edited_notebooks_are_valid_and_keep_their_outputs(name):
    nb = notebook(name)
    nbformat.validate(nb)
    assert any(c.cell_type == "code" and c.get("outputs") for c in nb.cells)


def test_the_steering_table_in_docs_is_notebook_06s_stored_output_and_its_prose_holds():
    import re

    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "06_controls.ipynb", as_version=4)
    i = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and "TOPIC = (" in c.source)
    table = "".join(o.get("text", "") for o in nb.cells[i].outputs).strip()
    assert table in (ROOT / "docs" / "benchmarks.md").read_text()
    rows = {m[0]: (int(m[1]), float(m[2]), float(m[3]), float(m[4]))
            for m in re.findall(r"^\| ([^|]+?) \| (\d+)/8 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", table, re.M)}
    base, s2, s4, s8 = (rows[k] for k in ("unsteered", "Topic strength 2", "Topic strength 4", "Topic strength 8"))
    prose = nb.cells[i + 1].source
    assert "8 overwhelms the model" in prose and s8[3] < base[3] / 2 and s8[0] <= s4[0]
    assert "many times the unsteered one" in prose and s4[2] > 5 * base[2] and s4[0] > 4
    assert "at little cost" in prose and 0 < s2[0] and s2[2] < 1.5 * base[2]
    assert all(abs(rows[k][2] / base[2] - 1) < 0.2 and abs(rows[k][3] - base[3]) < 0.1 for k in ("cfg_scale 1", "cfg_scale 2"))


def test_notebook_04s_threshold_sweep_says_what_its_table_shows():
    import re

    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "04_draft_and_edit.ipynb", as_version=4)
    i = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and "M2T, T2T" in c.source)
    text = "".join(o.get("text", "") for o in nb.cells[i].outputs)
    rows = {(float(a), float(b)): (float(t), float(g))
            for a, b, t, g in re.findall(r"^\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+", text, re.M)}
    assert len(rows) == 12 and "<- S mode" in text and "<- Q mode" in text
    prose = nb.cells[next(k for k in range(i, len(nb.cells)) if nb.cells[k].source.startswith("Read the lines"))].source
    fast = rows[0.3, 0.9]
    assert "furthest right is also the highest" in prose
    assert fast[0] == max(t for t, _ in rows.values()) and fast[1] == max(g for _, g in rows.values())
    s_line = [rows[m, 0.0] for m in (0.3, 0.5, 0.7, 0.9)]
    assert "stays low at every mask threshold" in prose and max(g for _, g in s_line) < 1.2 * min(g for _, g in s_line)
    assert "TPF falls again" in prose and rows[0.3, 0.0][0] < rows[0.5, 0.0][0]


def test_notebook_04s_readable_correction_prose_reads_the_search_and_the_rerun():
    nb = notebook("04_draft_and_edit.ipynb")
    listing = output(nb, "found += [(seed, i, c) for c in corrections(")
    count, runs = map(int, re.match(r"(\d+) readable corrections in (\d+) S-mode runs", listing).groups())
    rows = re.findall(r"seed (\d)\s+prompt\s+(\d+)\s+block (\d)\s+'(.+?)' → '(.+?)'", listing)
    assert len(rows) == count
    rerun = output(nb, "seed, i, best = max(found")
    seed, prompt, step = re.search(r"seed (\d), prompt (\d+) .*full at step (\d+)", rerun).groups()
    before = re.search(r"draft: .*\[(.+?)\]", rerun).group(1)
    after = re.search(r"final: .*\[(.+?)\]", rerun).group(1)
    edits = re.findall(r"step\s+\d+\s+pos\s+\d+\s+('.*?') → ('.*?')\s+p=([\d.]+)", rerun)
    assert (seed, prompt, before, after) in [(s, p, b, a) for s, p, _, b, a in rows]
    assert len(before) == max(len(b) for *_, b, _ in rows)          # "the longest"
    prose = markdown(nb, "readable corrections in")
    says(prose, f"found {count} readable corrections in {runs} runs", f"prompt {prompt}", f"step {step}",
         f"`{before}`", f"`{after}`", "greedy" if seed == "0" else f"seed {seed}")
    says(prose, *(f"`{old}` → `{new}` (p {p})" for old, new, p in edits))
    assert f"rewrote {['no', 'one', 'two', 'three'][len(edits)]} pieces" in prose


def test_notebook_10s_prose_reads_its_losses_training_run_and_steps_sweep():
    nb = notebook("10_train_from_scratch.ipynb")
    losses = output(nb, "x0 = corpus.batch(")
    ln_v = re.search(r"ln V = ([\d.]+)", losses).group(1)
    fresh, tiny = (re.search(rf"{name}\s+masked loss at t=0.1 / 0.5 / 0.9: ([\d.]+) / ([\d.]+) / ([\d.]+) \| t drawn "
                             rf"per row: ([\d.]+) nats = ([\d.]+) bits", losses).groups()
                   for name in ("fresh masked model", "tiny \\(embedded\\)"))
    total, rounding = re.search(r"loss ([\d.]+) = MSE [\d.]+ \+ rounding ([\d.]+)", losses).groups()
    prose = markdown(nb, "A fresh model's masked loss")
    says(prose, f"ln V = {ln_v}", f"from {tiny[0]} at *t* = 0.1 to {tiny[2]} at *t* = 0.9", f"{tiny[4]} bits",
         f"({rounding} of {total})")
    assert all(abs(float(f) - float(ln_v)) < 0.1 for f in fresh[:3]) and float(tiny[0]) < float(tiny[1]) < float(tiny[2])
    assert float(rounding) > float(total) / 2                                      # "mostly its rounding term"

    step = output(nb, "loss = loss_at_step0()")
    before, after = map(float, re.search(r"^loss ([\d.]+) \|.*after the step ([\d.]+)", step, re.M).groups())
    assert "is lower after the step" in markdown(nb, "### One training step by hand") and after < before
    assert "the same weights after it: True" in step

    run = output(nb, "for name, res in runs.items():\n    loss = [l for _, l in res.history]\n    print(f\"{name:<10} {len")
    last20 = re.search(r"masked\s+\d+ steps in \d+ s \| .* last 20 ([\d.]+)", run).group(1)
    training = markdown(nb, "The two losses are not on the same scale")
    says(training, f"gets to {last20} (the mean of its last 20 steps")
    samples = re.findall(r"step\s+\d+: '(ROMEO:\\n.*?)'", output(nb, 'masked = train_live("masked")'))
    answer = samples[-1].encode().decode("unicode_escape")[len("ROMEO:\n"):]
    assert "still mostly newlines" in training and answer.count("\n") > len(answer) / 2, answer

    rows = [(int(s), float(g), float(w), float(t)) for s, g, w, t in
            re.findall(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", output(nb, "STEPS = ("), re.M)]
    sweep = markdown(nb, "More steps help")
    (s0, g0, w0, _), (s1, g1, w1, t1) = rows[0], rows[-1]
    says(sweep, f"{g0:,.0f} at {s0} steps to {g1:,.0f} at {s1}", f"from {w0:.2f} to {w1:.2f}",
         f"{t1:.2f} s for the 8 answers at {s1}")
    assert "falls with every doubling" in sweep and all(a[1] > b[1] for a, b in zip(rows, rows[1:]))
    assert [s for s, *_ in rows] == [2 ** k for k in range(1, len(rows) + 1)]


def test_docs_benchmarks_carry_notebook_04s_sweep_and_correction():
    nb = notebook("04_draft_and_edit.ipynb")
    docs = docs_benchmarks()
    table = output(nb, "M2T, T2T").strip("\n")
    assert f"```\n{table}\n```" in docs
    part = flat(section(docs, "### Draft and edit: the spectrum between S and Q, and a readable correction"))
    rerun = output(nb, "seed, i, best = max(found")
    seed, prompt = re.search(r"seed (\d), prompt (\d+)", rerun).groups()
    before = re.search(r"draft: .*\[(.+?)\]", rerun).group(1)
    after = re.search(r"final: .*\[(.+?)\]", rerun).group(1)
    n_edits = len(re.findall(r"^\s+step\s+\d+\s+pos", rerun, re.M))
    says(part, f"`{before}`", f"`{after}`", f"prompt {prompt}", "greedy" if seed == "0" else f"seed {seed}",
         f"{['no', 'one', 'two', 'three'][n_edits]} post-edit T2T steps")


def test_the_setups_docs_and_notebook_10_state_are_the_ones_the_code_runs():
    nb04, nb10 = notebook("04_draft_and_edit.ipynb"), notebook("10_train_from_scratch.ipynb")
    search = code_cell(nb04, "found += [(seed, i, c) for c in corrections(").source
    sweep = code_cell(nb04, "M2T, T2T").source
    part = flat(section(docs_benchmarks(), "### Draft and edit: the spectrum between S and Q, and a readable correction"))
    assert "sample_prompts(12)" in search and "range(3)" in search and "gen_length=64" in search
    says(part, "12 prompts × 3 seeds, 64 tokens")
    assert "gen_length=128, block_length=32" in sweep and "prompts = sample_prompts(6)" in code_cell(nb04, "S + MBE").source
    says(part, "6 held-out prompts, 128 tokens, blocks of 32")
    assert "def steps_per_second(cfg, steps=20)" in code_cell(nb10, "def train_live").source
    says(markdown(nb10, "The step budget is what"), "a 20-step run", "1.5 × `BUDGET`")
    assert "seconds=1.5 * BUDGET" in code_cell(nb10, "def train_live").source
