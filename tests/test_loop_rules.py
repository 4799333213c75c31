"""Every rule through the one loop: rows finish independently, post-edit steps, EOS early stop,
the anti-stutter penalty and the autoregressive baseline."""
import pytest
import torch

import labkit as lk

KW = dict(gen_length=32, block_length=16, steps=32)
RULES = {
    "low_confidence": lk.LowConfidence(),
    "threshold": lk.Threshold(threshold=0.05),
    "factor": lk.Threshold(threshold=None, factor=1.0),
    "entropy_bound": lk.EntropyBound(entropy_bound=8.0),
    "draft_edit_speed": lk.DraftEdit.speed(threshold=0.01),
    "draft_edit_quality_mbe": lk.DraftEdit.quality(threshold=0.01, editing_threshold=0.01, mbe_blocks=1,
                                                   mbe_threshold=0.01),
    "autoregressive": lk.Autoregressive(),
}


class Scripted:
    """A stand-in model whose logits are a function of the canvas: logits_fn(x) → (B, L, V)."""
    kind, name, mask_id, pad_id, eos_id, eot_id, max_length = "masked", "scripted", 2, 0, 1, None, 256
    device = torch.device("cpu")

    def __init__(self, logits_fn):
        self.logits_fn = logits_fn

    @property
    def stop_ids(self):
        return (self.eos_id,)

    def __call__(self, x, attention_mask=None):
        return self.logits_fn(x).clone()

    def encode(self, text):
        return [3 + (ord(c) % 10) for c in text]

    def decode(self, ids, skip_special=True):
        return " ".join(str(int(i)) for i in ids)


@pytest.mark.parametrize("name", RULES)
def test_batch_of_four_equals_four_batches_of_one(tiny, name):
    prompts = ["ROMEO:\n", "JULIET:\nO Romeo, Romeo!\n", "KING:\n", "FIRST CITIZEN:\nBefore we proceed\n"]
    batch = lk.generate(tiny, prompts, RULES[name], **KW)
    Pb = batch.trace.prompt_len
    for i, p in enumerate(prompts):
        single = lk.generate(tiny, p, RULES[name], **KW)
        assert torch.equal(batch.ids[i, Pb:], single.ids[0, single.trace.prompt_len:]), (name, i)


@pytest.mark.parametrize("name", RULES)
def test_every_rule_fills_the_canvas_and_keeps_the_prompt(toy, name):
    out = lk.generate(toy, ["ROMEO:\n", "KING:\n"], RULES[name], **KW)
    tr, P = out.trace, out.trace.prompt_len
    assert not (out.ids[:, P:] == toy.mask_id).any()
    assert torch.equal(out.ids[:, :P], tr.init[:, :P].long())
    assert not (tr.edits() & tr.committed()).any()
    assert not tr.committed()[:, :, :P].any() and not tr.edits()[:, :, :P].any()
    assert out.stats["nfe"] == len(tr)


def test_draft_edit_blocks_stop_after_convergence_or_the_post_budget(toy):
    rule = lk.DraftEdit.speed(threshold=0.01)               # toy confidences are tiny: M2T is 1/step
    recs = list(lk.stream(toy, "ROMEO:\n", rule, **KW))
    for block in (0, 1):
        n = sum(r.block == block for r in recs)
        assert KW["block_length"] // 16 <= n <= KW["block_length"] + rule.max_post_steps
        post = [r for r in recs if r.block == block and not r.committed.any()]
        # a post step that changed nothing ends the block: it must be the block's last step
        quiet = [i for i, r in enumerate(post) if not r.edited.any()]
        assert quiet in ([], [len(post) - 1])


def test_edits_never_touch_prompt_or_masks(tiny):
    rule = lk.DraftEdit.speed(mbe_blocks=1, mbe_threshold=0.3)
    trace = lk.generate(tiny, "ROMEO:\n", rule, **KW).trace
    x, P = trace.init.long(), trace.prompt_len
    assert trace.edits().any()                              # S mode edits freely (τ_edit = 0)
    for rec in trace:
        assert not rec.edited[:, :P].any()
        assert not (rec.edited & (x == tiny.mask_id)).any()
        assert torch.equal(rec.tokens[:, :P], x[:, :P])
        x = rec.tokens


def eos_model(eos_at: int, P: int):
    """Sure of token 5 everywhere except answer position eos_at, where it is sure of EOS."""
    def fn(x):
        B, L = x.shape
        logits = torch.zeros(B, L, 16)
        logits[..., 5] = 10.0
        logits[:, P + eos_at, 5] = 0.0
        logits[:, P + eos_at, 1] = 10.0
        return logits
    return fn


@pytest.mark.parametrize("name", ["low_confidence", "threshold", "draft_edit_speed", "autoregressive"])
def test_eos_early_stop(name):
    P = 4                                                   # "ab:\n" encodes to 4 ids
    lm = Scripted(eos_model(eos_at=3, P=P))
    full = lk.generate(lm, "ab:\n", RULES[name], **KW)
    stop = lk.generate(lm, "ab:\n", RULES[name], eos_early_stop=True, **KW)
    assert stop.texts == full.texts == ["5 5 5"]
    assert stop.stats["nfe"] < full.stats["nfe"]
    assert (stop.ids[0, P + KW["block_length"]:] == lm.mask_id).all()   # the second block never ran


def test_rows_stop_independently():
    P = 4
    lm = Scripted(eos_model(eos_at=3, P=P))
    out = lk.generate(lm, ["ab:\n", "cd:\n"], lk.Autoregressive(), eos_early_stop=True, **KW)
    assert out.texts == ["5 5 5", "5 5 5"] and out.stats["nfe"] == 4


def test_penalty_lambda_breaks_stutter():
    def fn(x):                                               # prefers 7 over 8 by one nat everywhere
        logits = torch.zeros(*x.shape, 16)
        logits[..., 7], logits[..., 8] = 5.0, 4.0
        return logits
    lm = Scripted(fn)
    plain = lk.generate(lm, "ab:\n", lk.Autoregressive(), **KW)
    assert set(plain.ids[0, 4:].tolist()) == {7}
    anti = lk.generate(lm, "ab:\n", lk.Autoregressive(), penalty_lambda=2.0, **KW)
    answer = anti.ids[0, 4:].tolist()
    assert all(a != b for a, b in zip(answer, answer[1:])) and set(answer) == {7, 8}
    with pytest.raises(ValueError, match="penalty_lambda"):
        lk.generate(lm, "ab:\n", penalty_lambda=-1.0, **KW)


def test_causal_model_through_the_loop_equals_plain_greedy_decoding():
    ar = lk.toy(causal=True, seed=1)
    out = lk.generate(ar, "ROMEO:\n", **KW)
    x = torch.tensor([ar.encode("ROMEO:\n")])
    for _ in range(KW["gen_length"]):
        logits = ar(x)[:, -1]
        logits[..., ar.mask_id] = float("-inf")
        x = torch.cat([x, logits.argmax(-1, keepdim=True)], 1)
    assert torch.equal(out.ids, x)
    commit_step = out.trace.commit_step()[0, out.trace.prompt_len:]
    assert commit_step.tolist() == list(range(KW["gen_length"]))   # the diagonal


def test_row_nfe_counts_only_the_steps_a_row_took_part_in():
    P = 4
    first_a = Scripted(None).encode("a")[0]

    def fn(x):                       # row starting with "a" ends at answer position 3, the other at 10
        logits = torch.zeros(*x.shape, 16)
        logits[..., 5] = 10.0
        for b in range(x.shape[0]):
            at = P + (3 if x[b, 0] == first_a else 10)
            logits[b, at, 5], logits[b, at, 1] = 0.0, 10.0
        return logits
    out = lk.generate(Scripted(fn), ["ab:\n", "cd:\n"], lk.Autoregressive(), eos_early_stop=True, **KW)
    assert out.trace.row_nfe().tolist() == [4, 11] and out.stats["nfe"] == 11
    assert out.stats["row_nfe"] == 15 and out.stats["tpf"] == pytest.approx(out.stats["gen_tokens"] / 15)
    assert not out.trace.active()[4:, 0].any() and out.trace.active()[:, 1].all()
