"""Helpers the shipped lm-eval tasks name with `!function utils.…`: the local JSONL beside this
file as a dataset (no network), and the word-overlap metric of line completion."""
import json
import re
from pathlib import Path

HERE = Path(__file__).parent


def load(name: str, **_) -> dict:
    """{"test": the rows of HERE / name.jsonl} as a datasets.Dataset."""
    import datasets  # lm-eval's own dependency: only lm-eval calls this, the metric below needs it not

    rows = [json.loads(line) for line in (HERE / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
    return {"test": datasets.Dataset.from_list(rows)}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def word_f1(reference: str, prediction: str) -> float:
    """F1 of the words of a prediction against the reference (bags of words, case and punctuation ignored)."""
    ref, pred = _words(reference), _words(prediction)
    if not ref or not pred:
        return float(ref == pred)
    common = sum(min(ref.count(w), pred.count(w)) for w in set(ref))
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def process_complete(doc: dict, results: list[str]) -> dict:
    prediction = results[0].split("\n")[0]
    return {"exact_match": float(prediction.strip() == doc["target"].strip()),
            "word_f1": word_f1(doc["target"], prediction)}
