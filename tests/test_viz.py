"""labkit.ui.viz: figures and HTML from traces, checked against a real toy trace and a hand-built one."""
import math

import numpy as np
import pytest
import torch

import labkit as lk
from labkit import viz
from labkit.samplers.base import StepRecord
from labkit.trace import Trace

GEN = 32


@pytest.fixture(scope="module")
def lm():
    return lk.toy()


@pytest.fixture(scope="module")
def trace(lm):
    out = lk.generate(lm, "ROMEO:\n", lk.LowConfidence(), gen_length=GEN, block_length=16, steps=32)
    return out.trace


# --- a hand-built trace with known answers -----------------------------------------------------
MASK, P = 0, 2
STRINGS = {0: "<mask>", 5: "A", 6: "B", 7: "x", 8: "<b>", 9: "y\n", 10: "z", 11: "w"}
# per row, per step: {generated offset: (token, confidence, "c" commit | "e" edit)}
PLAN = [
    [{1: (7, 0.9, "c")}, {0: (8, 0.2, "c"), 3: (9, 0.5, "c")}, {2: (10, 0.6, "c"), 1: (11, 0.95, "e")}],
    [{3: (7, 0.8, "c")}, {2: (8, 0.8, "c")}, {0: (10, 0.1, "c"), 1: (9, 0.4, "c")}],
]
STATE_ROW0 = [[0, 1, 0, 0], [1, 2, 0, 1], [2, 3, 1, 2]]      # masked / new / earlier / edited


class FakeLM:
    mask_id = MASK

    def token_strings(self, ids):
        return [STRINGS[int(i)] for i in ids]


def build(plan=PLAN, meta=None) -> Trace:
    B, L = len(plan), P + 4
    x = torch.full((B, L), MASK, dtype=torch.long)
    x[:, :P] = torch.tensor([5, 6])
    t = Trace(prompt_len=P, mask_id=MASK, init=x.clone(), meta=meta or {})
    for s in range(len(plan[0])):
        conf = torch.full((B, L), float("nan"))
        com, ed = torch.zeros(B, L, dtype=torch.bool), torch.zeros(B, L, dtype=torch.bool)
        for b in range(B):
            for off, (tok, c, what) in plan[b][s].items():
                x[b, P + off], conf[b, P + off] = tok, c
                (com if what == "c" else ed)[b, P + off] = True
        t.append(StepRecord(step=s, block=0, tokens=x.clone(), candidates=x.clone(), confidence=conf,
                            committed=com, edited=ed, seconds=0.01))
    return t


def images(fig):
    return sum(len(a.images) for a in fig.axes)


def test_state_matrix_exact():
    t = build()
    assert viz._state(t, 0).tolist() == STATE_ROW0
    assert viz._state(t, 1).tolist() == [[0, 0, 0, 1], [0, 0, 1, 2], [1, 1, 2, 2]]
    fig = viz.heatmap(t, FakeLM(), "state", row=0)
    z = np.asarray(fig.data[0].z)
    assert z.tolist() == STATE_ROW0
    assert list(fig.data[0].colorbar.ticktext) == list(viz.STATE_NAMES[:4])  # edits → 4 categories (5 with pins)
    assert fig.data[0].zmin == -0.5 and fig.data[0].zmax == 3.5
    # hover text: escaped token strings, masks as the glyph, newlines as ↵
    text = np.asarray(fig.data[0].text)
    assert text[0].tolist() == [viz.MASK_GLYPH, "x", viz.MASK_GLYPH, viz.MASK_GLYPH]
    assert text[1].tolist() == ["&lt;b&gt;", "x", viz.MASK_GLYPH, "y↵"]
    # without edits only three categories are named
    no_edit = viz.heatmap(t, None, "state", row=1)
    assert list(no_edit.data[0].colorbar.ticktext) == list(viz.STATE_NAMES[:3])


def test_other_kinds_exact():
    t = build()
    conf = np.asarray(viz.heatmap(t, kind="confidence").data[0].z, dtype=float)
    expect = [[np.nan, 0.9, np.nan, np.nan], [0.2, np.nan, np.nan, 0.5], [np.nan, 0.95, 0.6, np.nan]]
    np.testing.assert_allclose(conf, expect, atol=1e-3)          # float16 storage
    cs = viz.heatmap(t, FakeLM(), "commit_step", row=1)
    assert np.asarray(cs.data[0].z).tolist() == [[2, 2, 1, 0]]
    assert np.asarray(cs.data[0].text).tolist() == [["z", "y↵", "&lt;b&gt;", "x"]]
    ed = np.asarray(viz.heatmap(t, kind="edits").data[0].z)
    assert ed.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]]


def test_token_grid_hand_built():
    t, lm = build(), FakeLM()
    g0 = viz.token_grid(t, lm, step=0)
    assert g0.count('class="lk-m"') == 3 and g0.count('class="lk-g"') == 1   # x at 0.9: green
    g1 = viz.token_grid(t, lm, step=1)
    assert g1.count('class="lk-m"') == 1
    assert '<span class="lk-r" title="conf 0.20">&lt;b&gt;</span>' in g1      # red, escaped
    assert '<span class="lk-b">x</span>' in g1                               # earlier: blue
    assert '<span class="lk-o" title="conf 0.50">y↵</span><br>' in g1         # orange, newline
    assert "<b>" not in g1.replace("<br>", "")
    final = viz.token_grid(t, lm)
    assert final == viz.token_grid(t, lm, step=-1) == viz.token_grid(t, lm, step=2)
    assert 'lk-m"' not in final and "lk-g lk-e" in final                       # edit outlined
    steps = viz.token_grid_steps(t, lm, row=1)
    assert steps.count("<div><span class=\"lk-n\">") == 3 and "<br>" not in steps
    assert steps.count('class="lk-m"') == 3 + 2 + 0


def test_matplotlib_hand_built():
    t = build()
    for kind in viz.KINDS:
        fig = viz.heatmap_matplotlib(t, FakeLM(), kind=kind)
        assert images(fig) == 1
    fig = viz.heatmap_matplotlib(t, FakeLM(), kind="commit_step")
    assert fig.axes[0].images[0].get_array().shape == (1, 4)
    assert [x.get_text() for x in fig.axes[0].get_xticklabels()] == ["<b>", "w", "z", "y↵"]
    fig = viz.heatmap_matplotlib(t, kind="state")
    assert np.asarray(fig.axes[0].images[0].get_array()).tolist() == STATE_ROW0


def test_matplotlib_draws_on_given_ax():
    from matplotlib.figure import Figure
    own = Figure()
    ax = own.add_subplot()
    assert viz.heatmap_matplotlib(build(), kind="confidence", ax=ax) is own
    assert len(ax.images) == 1


# --- the toy model's real trace ----------------------------------------------------------------
def test_state_matches_trace(trace):
    P, S = trace.prompt_len, len(trace)
    state = np.asarray(viz.heatmap(trace, kind="state").data[0].z)
    assert state.shape == (S, GEN)
    committed = trace.committed()[:, 0, P:].numpy()
    np.testing.assert_array_equal(state == viz.NEW, committed)
    done = np.cumsum(committed.sum(1))                       # committed so far after each step
    np.testing.assert_array_equal((state == viz.MASKED).sum(1), GEN - done)
    np.testing.assert_array_equal(state == viz.MASKED, trace.masked()[:, 0, P:].numpy())
    assert ((state == viz.EARLIER) == (~trace.masked()[:, 0, P:].numpy() & ~committed)).all()


def test_confidence_nonnan_exactly_at_commits(trace, lm):
    z = np.asarray(viz.heatmap(trace, lm, kind="confidence").data[0].z, dtype=float)
    np.testing.assert_array_equal(~np.isnan(z), trace.committed()[:, 0, trace.prompt_len:].numpy())
    assert np.nanmin(z) >= 0 and np.nanmax(z) <= 1
    fig = viz.heatmap(trace, lm, kind="confidence")
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, 1)


def test_commit_step_row(trace):
    z = np.asarray(viz.heatmap(trace, kind="commit_step").data[0].z)
    assert z.shape == (1, GEN)
    np.testing.assert_array_equal(z[0], trace.commit_step()[0, trace.prompt_len:].numpy())


def test_figures_are_base64_arrays(trace):
    js = viz.heatmap(trace, kind="state").to_json()
    assert '"bdata"' in js


def test_token_grid_masks(trace, lm):
    P = trace.prompt_len
    masked = trace.masked()[:, 0, P:].sum(1)
    g0 = viz.token_grid(trace, lm, step=0)
    assert g0.count('class="lk-m"') == int(masked[0]) == GEN - int(trace.committed()[0, 0].sum())
    assert g0.count('title="conf') == int(trace.committed()[0, 0].sum())
    final = viz.token_grid(trace, lm)
    assert 'class="lk-m"' not in final
    steps = viz.token_grid_steps(trace, lm)
    assert steps.count('class="lk-m"') == int(masked.sum())
    assert steps.count('<span class="lk-n">') == len(trace)


def test_step_slider(trace, lm):
    fig = viz.step_slider(trace, lm)
    S = len(trace)
    assert len(fig.frames) == S
    assert len(fig.layout.sliders) == 1 and len(fig.layout.sliders[0].steps) == S
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert labels == ["Play", "Pause"]
    state = viz._state(trace, 0)
    for s in (0, S // 2, S - 1):
        z = np.asarray(fig.frames[s].data[0].z, dtype=float).ravel()[:GEN]
        np.testing.assert_array_equal(z, state[s])
        assert set(fig.frames[s].data[0].to_plotly_json()) <= {"type", "z", "text"}   # small frames
    assert (fig.data[0].zmin, fig.data[0].zmax) == (-0.5, 2.5)


def test_to_html(trace, lm, tmp_path):
    path = viz.to_html(trace, lm, tmp_path / "sub" / "out.html", title="t <1>",
                       stats={"nfe": trace.nfe, "tps": 12.3456})
    assert path == tmp_path / "sub" / "out.html" and path.exists()
    doc = path.read_text(encoding="utf-8")
    assert "plotly" in doc.lower() and '<script src="http' not in doc    # plotly.js inlined
    assert len(doc) > 1_000_000                                          # ~3.5 MB of plotly.js
    assert "t &lt;1&gt;" in doc and "12.35" in doc
    assert doc.count('<span class="lk-n">') == len(trace)


def test_matplotlib_toy(trace, lm):
    for kind in ("state", "confidence", "commit_step"):
        fig = viz.heatmap_matplotlib(trace, lm, kind=kind)
        assert images(fig) == 1
    assert fig._repr_png_().startswith(b"\x89PNG")        # a notebook shows it as an image


def test_stats_table():
    html = viz.stats_table({"nfe": 3, "<x>": 0.123456})
    assert html.count("<tr>") == 2 and "&lt;x&gt;" in html and "0.1235" in html


# --- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [viz.heatmap, viz.heatmap_matplotlib])
def test_bad_kind(fn):
    with pytest.raises(ValueError, match="kind") as e:
        fn(build(), kind="nope")
    assert "state" in str(e.value)


@pytest.mark.parametrize("row", [2, -1, 1.0, True])
def test_bad_row(row):
    t, lm = build(), FakeLM()
    for call in (lambda: viz.heatmap(t, row=row), lambda: viz.token_grid(t, lm, row=row),
                 lambda: viz.step_slider(t, lm, row=row), lambda: viz.heatmap_matplotlib(t, row=row)):
        with pytest.raises(ValueError, match=r"row .*\[0, 2\)"):
            call()


def test_bad_step_and_empty_trace():
    t = build()
    with pytest.raises(ValueError, match="step"):
        viz.token_grid(t, FakeLM(), step=3)
    empty = Trace(prompt_len=P, mask_id=MASK, init=torch.zeros(1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="no steps"):
        viz.heatmap(empty)


def test_block_edges_drawn():
    t = build(meta={"block_length": 2})
    fig = viz.heatmap(t)
    assert [s.x0 for s in fig.layout.shapes] == [1.5]
    z = np.asarray(fig.data[0].z)
    assert z.dtype == np.int8 and z.tolist() == STATE_ROW0     # an edge is a line over the cells, no gap column
    assert z[0, 0] == viz.MASKED                               # not yet committed: the masked category


def test_never_committed_positions():
    """A position no step commits (offset 2 of row 0 here) stays the MASKED category in the state
    matrix at every step, and its commit step is nan (Trace.commit_step's -1) — not 0, which would
    read as "committed at step 0"."""
    plan = [[{1: (7, 0.9, "c")}, {0: (8, 0.2, "c"), 3: (9, 0.5, "c")}, {1: (11, 0.95, "e")}], PLAN[1]]
    t = build(plan)
    assert t.commit_step()[0, P:].tolist() == [1, 0, -1, 1]
    state = viz._state(t, 0)
    assert state[:, 2].tolist() == [viz.MASKED] * 3
    assert state.tolist() == [[0, 1, 0, 0], [1, 2, 0, 1], [2, 3, 0, 2]]
    z = np.asarray(viz.heatmap(t, kind="commit_step").data[0].z, dtype=float)
    assert z.shape == (1, 4) and math.isnan(z[0, 2])
    assert z[0, [0, 1, 3]].tolist() == [1.0, 0.0, 1.0]
    conf = np.asarray(viz.heatmap(t, kind="confidence").data[0].z, dtype=float)
    assert np.isnan(conf[:, 2]).all()                          # never written: no confidence either
    img = viz.heatmap_matplotlib(t, kind="commit_step").axes[0].images[0].get_array()
    assert np.ma.getmaskarray(img)[0].tolist() == [False, False, True, False]   # drawn as "bad" (white)
    assert viz.token_grid(t, FakeLM()).count(viz.MASK_GLYPH) == 1


def test_commit_step_colour_bar_lies_under_the_row(trace):
    """A vertical bar beside a one-row heatmap is a few pixels tall and its tick labels overlap
    (issue 15): the bar runs along the positions instead, with room below the axis."""
    fig = viz.heatmap(trace, kind="commit_step")
    bar = fig.data[0].colorbar
    assert bar.orientation == "h" and bar.len >= 0.8 and bar.y < 0
    assert fig.layout.margin.b >= 100


def test_a_plotly_figure_has_a_static_png_twin_drawn_from_its_data():
    import base64
    import io

    import plotly.graph_objects as go
    import plotly.io as pio
    from matplotlib.image import imread
    from plotly.subplots import make_subplots

    from labkit.ui.static import PLOTLY_MIME, _array, figure_png, register

    lm = lk.toy()
    out = lk.generate(lm, ["to be", "or not"], gen_length=16, block_length=8, steps=16)
    two = make_subplots(rows=1, cols=2)
    two.add_trace(go.Scatter(y=[1, 3, 2], mode="lines+markers", name="a"), 1, 1)
    two.add_trace(go.Bar(x=["p", "q"], y=[2, 5]), 1, 2)
    two.add_trace(go.Scatter(y=[0, 1]), 1, 2)
    for fig in (lk.viz.heatmap(out.trace, lm), lk.viz.heatmap(out.trace, lm, kind="commit_step"),
                lk.viz.step_slider(out.trace, lm), two):
        png = figure_png(fig.to_dict())
        image = imread(io.BytesIO(png))
        assert image.shape[0] > 100 and image.shape[1] > 300 and image[..., :3].std() > 0.05   # drawn, not blank
    bundle = pio.renderers[register()].to_mimebundle(lk.viz.heatmap(out.trace, lm).to_dict())
    assert set(bundle) == {PLOTLY_MIME, "image/png"} and base64.b64decode(bundle["image/png"])[:4] == b"\x89PNG"
    typed = {"dtype": "f4", "bdata": base64.b64encode(np.arange(6, dtype="f4").tobytes()).decode(), "shape": "2, 3"}
    assert np.array_equal(_array(typed), np.arange(6, dtype="f4").reshape(2, 3))
    lk.viz.notebook_mode()
    assert pio.renderers.default == "labkit"


def test_every_stored_plotly_figure_carries_a_png():
    """Every plotly figure stored in a notebook also carries its PNG, so GitHub, nbviewer and
    print show it (notebooks re-executed with lk.viz.notebook_mode())."""
    import json
    from pathlib import Path

    figures = 0
    for path in sorted(Path(__file__).resolve().parents[1].glob("notebooks/*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            for o in cell.get("outputs", []):
                if "application/vnd.plotly.v1+json" in o.get("data", {}):
                    figures += 1
                    assert "image/png" in o["data"], f"{path.name} cell {i}: a plotly figure without its PNG"
    assert figures >= 20
