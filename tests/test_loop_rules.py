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
    begin_block = family = None             # keeps nothing between steps (labkit.models.handle.Denoiser)
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
    rule = lk.DraftEdit.speed(threshold=0.01)               # toy confidences are ~1e-3: M2T is 1/step
    recs = list(lk.stream(toy, "ROMEO:\n", rule, **KW))
    assert [r.block for r in recs] == sorted(r.block for r in recs) and {r.block for r in recs} == {0, 1}
    for block in (0, 1):
        mine = [r for r in recs if r.block == block]
        # below the threshold everywhere, the fallback commits exactly 1 mask per step: 16 draft steps
        # for the block's 16 masks, each committing one token, before any post step
        draft = [int(r.committed.sum()) for r in mine[:16]]
        assert draft == [1] * 16
        post = mine[16:]
        assert not any(r.committed.any() for r in post)
        # a full block takes at least 1 post step (it has not converged yet) and at most 16 (S mode's budget)
        assert 1 <= len(post) <= 16
        # a post step that changed nothing ends the block: it must be the block's last step; without
        # one, the block ran out of post steps
        quiet = [i for i, r in enumerate(post) if not r.edited.any()]
        if len(post) < 16:
            assert quiet == [len(post) - 1]
        else:
            assert quiet in ([], [15])


def sure_of_5(x):
    """Sure (p ~ 0.9993) of token 5 everywhere: a block drafts in one step, then nothing changes."""
    logits = torch.zeros(*x.shape, 16)
    logits[..., 5] = 10.0
    return logits


def flip_5_6(x):
    """Sure of 5 at a mask or a 6 and of 6 at a 5: every written token wants rewriting, forever."""
    logits = torch.zeros(*x.shape, 16)
    logits.scatter_(-1, torch.where(x == 5, 6, 5)[..., None], 10.0)
    return logits


@pytest.mark.parametrize("fn, max_post, per_block, edits, final", [
    (sure_of_5, 16, 2, [0, 0], 5),          # draft 16 at once; 1 quiet post step: converged
    (flip_5_6, 3, 4, [0, 16, 16, 16], 6),   # draft; 3 post steps rewriting all 16 (5→6→5→6): budget spent
    (flip_5_6, 0, 1, [0], 5),               # no post steps at all: the block ends when it is full
    (flip_5_6, 5, 6, [0] + [16] * 5, 6),    # 5 flips: an odd count ends on 6
], ids=["converges", "post_budget_3", "post_budget_0", "post_budget_5"])
def test_draft_edit_block_lengths_by_hand(fn, max_post, per_block, edits, final):
    """Block lengths worked out by hand: 1 draft step (every p ~ 0.9993 > 0.5 commits the whole block)
    plus the post steps until a quiet one (converged) or until max_post_steps were taken."""
    P = 4
    rule = lk.DraftEdit.speed(max_post_steps=max_post)
    out = lk.generate(Scripted(fn), "ab:\n", rule, **KW)
    recs = out.trace.records
    assert [r.block for r in recs] == [0] * per_block + [1] * per_block
    for block in (0, 1):
        mine = [r for r in recs if r.block == block]
        assert [int(r.committed.sum()) for r in mine] == [16] + [0] * (per_block - 1)
        assert [int(r.edited.sum()) for r in mine] == edits
    assert out.ids[0, P:].tolist() == [final] * KW["gen_length"]


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
