"""The embedded models' cards: each README.md is what benchmarks/docgen/cards.py writes from the
model's folder (training.json, config.json, the weights, eval.json), `labkit eval --card` stores
its figures as eval.json and writes no markdown, and the task models' stored figures are the rows
`labkit bench tasks` measured for the same model and rule."""
import json
import shutil
from pathlib import Path

import pytest
from doc_common import ROOT
from docgen import cards
from docgen.__main__ import main as docgen_main
from docgen.weights import parameters

import labkit as lk
import labkit.cli.main as cli
from labkit.bench import tasks as bench
from labkit.models.load import EMBEDDED, model_folder
from labkit.training.card import EVAL_FILE


@pytest.mark.parametrize("model", EMBEDDED)
def test_each_committed_card_is_what_docgen_writes_from_its_folder(model):
    assert (model_folder(model) / EVAL_FILE).is_file(), f"{model}: labkit eval --model {model} --card"
    assert (model_folder(model) / "README.md").read_text() == cards.card(model), \
        f"labkit/weights/{model}/README.md: python -m benchmarks.docgen cards {model}"


@pytest.mark.parametrize("model", ["tiny-sudoku", "tiny-block4"])     # a structure_ids buffer; tied embeddings
def test_the_parameter_count_read_from_the_weights_file_is_the_loaded_models(model):
    assert parameters(model_folder(model)) == sum(p.numel() for p in lk.load(model).net.parameters())


def _summary(s: dict) -> dict:
    keep = {k: s[k] for k in ("n", "correct", "accuracy", "ci95", "nfe_mean", "tpf", "edits") if k in s}
    return {**keep, **({"groups": {g: _summary(v) for g, v in s["groups"].items()}} if "groups" in s else {})}


def test_the_pairs_stored_figures_are_the_bench_rows_of_their_rule():
    """Each pair model's eval.json (its own rule: low-confidence, or left to right for a twin) holds
    the summaries tasks.json holds for that model and rule."""
    result = json.loads((ROOT / "benchmarks" / "results" / "tasks.json").read_text())
    for pair, (masked, ar, tasks) in bench.PAIRS.items():
        for model, label in ((masked, "low-confidence"), (ar, bench.AR_LABEL)):
            stored = json.loads((model_folder(model) / EVAL_FILE).read_text())
            run = next(r for r in result["pairs"][pair]["runs"] if r["label"] == label)
            assert stored["sampler"] == run["sampler"], model
            assert {t: _summary(stored["tasks"][t]) for t in tasks} == {t: _summary(run["tasks"][t]) for t in tasks}, model


def _folder(tmp_path: Path, model: str) -> Path:
    """A copy of an embedded model's folder without its card and stored figures (weights linked)."""
    folder = tmp_path / model
    folder.mkdir()
    for f in model_folder(model).iterdir():
        if f.name == "model.safetensors":
            (folder / f.name).symlink_to(f)
        elif f.name not in ("README.md", EVAL_FILE):
            shutil.copy(f, folder / f.name)
    return folder


def test_eval_card_stores_the_task_figures_and_docgen_writes_the_card(tmp_path, capsys):
    folder = _folder(tmp_path, "tiny-add")
    assert cli.main(["eval", "--model", str(folder), "--tasks", "addition", "--n", "8", "--card", "--json"]) == 0
    out, err = capsys.readouterr()
    stored = json.loads((folder / EVAL_FILE).read_text())
    assert stored == json.loads(out) and stored["tasks"]["addition"]["n"] == 8
    assert f"docgen cards {folder}" in err and not (folder / "README.md").exists()      # labkit writes no card
    cards.write([str(folder)])
    text = (folder / "README.md").read_text()
    s = stored["tasks"]["addition"]
    assert f"| addition | 8 | {100 * s['accuracy']:.1f}% |" in text and f"Rule: `{stored['sampler']}`." in text


def test_eval_card_stores_the_held_out_figures(tmp_path, monkeypatch, capsys):
    """The Shakespeare models' path: what evaluate returned (with its time) is what eval.json holds,
    and the card's table shows it."""
    folder = _folder(tmp_path, "tiny-ar")
    figures = {"nll_bits_per_token": 5.25, "bits_per_token_se": 0.01, "heldout_tokens": 4096}
    monkeypatch.setattr(cli, "evaluate", lambda lm, seed=0: dict(figures))
    assert cli.main(["eval", "--model", str(folder), "--card"]) == 0
    stored = json.loads((folder / EVAL_FILE).read_text())
    assert stored == {**figures, "eval_seconds": stored["eval_seconds"]} and not (folder / "README.md").exists()
    text = cards.card(str(folder))
    assert "| nll_bits_per_token | 5.25 |\n| heldout_tokens | 4096 |" in text and "bits_per_token_se" not in text
    assert text.startswith(f"# labkit `{folder}`: a tiny causal (autoregressive twin) LM trained on Shakespeare")


def test_the_docgen_command_refuses_what_it_does_not_know(capsys):
    assert docgen_main(["card"]) == 2 and "usage" in capsys.readouterr().err
