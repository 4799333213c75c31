"""Loop invariants: the one decoding loop on a small random model."""
import dataclasses

import pytest
import torch
from records_common import assert_same_record

import labkit as lk

KW = dict(gen_length=32, block_length=16, steps=32)


@pytest.fixture(scope="module")
def out(toy):
    return lk.generate(toy, "ROMEO:\n", lk.LowConfidence(), **KW)


def test_no_mask_left_and_nfe_equals_records(out, toy):
    P = out.trace.prompt_len
    assert not (out.ids[:, P:] == toy.mask_id).any()
    assert out.stats["nfe"] == len(out.trace) == KW["steps"]
    assert out.stats["gen_tokens"] == KW["gen_length"]
    assert out.stats["tpf"] == pytest.approx(KW["gen_length"] / KW["steps"])


def test_each_position_committed_exactly_once_and_never_edited(out):
    c, e = out.trace.committed(), out.trace.edits()
    P = out.trace.prompt_len
    assert (c.sum(0)[:, P:] == 1).all() and not c[:, :, :P].any()
    assert not (c & e).any() and not e.any()


def test_prompt_never_changes(out, toy):
    P = out.trace.prompt_len
    prompt = torch.tensor(toy.encode("ROMEO:\n"))
    for rec in out.trace:
        assert torch.equal(rec.tokens[0, :P].long(), prompt)


def test_semi_autoregressive_blocks(out):
    """Block b's positions are committed only during block b's steps, and blocks run in order."""
    P, cs = out.trace.prompt_len, out.trace.commit_step()[0]
    per_block = KW["steps"] // (KW["gen_length"] // KW["block_length"])
    for b in range(KW["gen_length"] // KW["block_length"]):
        pos = cs[P + b * KW["block_length"]: P + (b + 1) * KW["block_length"]]
        assert ((pos >= b * per_block) & (pos < (b + 1) * per_block)).all()
    assert [r.block for r in out.trace] == sorted(r.block for r in out.trace)


def test_tokens_are_previous_plus_commits(out):
    prev = out.trace.init
    for rec in out.trace:
        changed = rec.tokens != prev
        assert torch.equal(changed, rec.committed)
        prev = rec.tokens


def test_seeded_run_repeats_exactly(toy):
    s = lk.LowConfidence(temperature=1.0)
    a = lk.generate(toy, "ROMEO:\n", s, seed=7, **KW)
    b = lk.generate(toy, "ROMEO:\n", s, seed=7, **KW)
    c = lk.generate(toy, "ROMEO:\n", s, seed=8, **KW)
    assert torch.equal(a.trace.tokens(), b.trace.tokens())
    assert torch.equal(torch.nan_to_num(a.trace.confidence().float()), torch.nan_to_num(b.trace.confidence().float()))
    assert not torch.equal(a.trace.tokens(), c.trace.tokens())




def as_stored(rec):
    """A record in the trace's compact dtypes (int32 ids, float16 confidence), as Trace.append keeps it."""
    return dataclasses.replace(rec, tokens=rec.tokens.int(), candidates=rec.candidates.int(),
                               confidence=rec.confidence.half())


@pytest.mark.parametrize("controls", [(), (lk.Pin(2, " the"),)], ids=["plain", "pinned"])
def test_stream_yields_the_same_records_as_generate(toy, controls):
    """Field by field: what stream() yields, what generate() hands on_step, and what its trace keeps."""
    kw = dict(KW, controls=controls)
    recs = list(lk.stream(toy, ["ROMEO:\n", "KING:\n"], lk.LowConfidence(temperature=1.0), seed=3, **kw))
    seen = []
    out = lk.generate(toy, ["ROMEO:\n", "KING:\n"], lk.LowConfidence(temperature=1.0), seed=3, on_step=seen.append,
                      **kw)
    n = len(recs)
    # 16 steps per block; with a pin block 0 has 15 masks, LLaDA's schedule commits them in 15 steps
    assert n == len(seen) == len(out.trace) and n == KW["steps"] - len(controls)
    assert [r.step for r in recs] == list(range(n))
    assert [r.block for r in recs] == sorted(r.block for r in recs) and {r.block for r in recs} == {0, 1}
    assert all(r.active is not None and r.active.all() for r in recs)
    assert all((r.pinned is not None) == bool(controls) for r in recs)
    assert any(r.confidence.isnan().any() for r in recs) and any((~r.confidence.isnan()).any() for r in recs)
    for i, (a, b, c) in enumerate(zip(recs, seen, out.trace)):
        assert_same_record(a, b, f"step {i}")
        assert_same_record(as_stored(a), c, f"step {i} (trace)")
    assert torch.equal(recs[-1].tokens.int(), out.trace.final)


def test_batch_rows_equal_single_runs(toy):
    """Left padding + attention mask: each row decodes as it would alone."""
    prompts = ["ROMEO:\n", "JULIET:\nO Romeo, Romeo! wherefore art thou\n", "KING:\n"]
    batch = lk.generate(toy, prompts, lk.LowConfidence(), **KW)
    for i, p in enumerate(prompts):
        single = lk.generate(toy, p, lk.LowConfidence(), **KW)
        assert batch.texts[i] == single.text
        P, Pb = single.trace.prompt_len, batch.trace.prompt_len
        assert torch.equal(batch.ids[i, Pb:], single.ids[0, P:])


@pytest.mark.parametrize("prompts", ["ROMEO:\n", ["ROMEO:\n", "A much longer prompt here:\n"]])
def test_cfg_with_and_without_attention_mask(toy, prompts):
    out = lk.generate(toy, prompts, lk.LowConfidence(), cfg_scale=1.5, **KW)
    assert out.stats["nfe"] == KW["steps"]
    assert not (out.ids[:, out.trace.prompt_len:] == toy.mask_id).any()
    plain = lk.generate(toy, prompts, lk.LowConfidence(), **KW)
    assert not torch.equal(out.ids, plain.ids)          # guidance changes the logits


def test_trace_save_load_round_trip(out, tmp_path):
    path = out.trace.save(tmp_path / "run.npz")
    back = lk.Trace.load(path)
    assert torch.equal(back.tokens(), out.trace.tokens())
    assert torch.equal(back.commit_step(), out.trace.commit_step())
    assert back.meta == out.trace.meta and back.prompt_len == out.trace.prompt_len
    assert torch.equal(back.confidence().isnan(), out.trace.confidence().isnan())
    assert torch.equal(back.active(), out.trace.active()) and back.row_nfe().tolist() == [KW["steps"]]


def test_trace_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a labkit trace"):
        lk.Trace.load(bad)


@pytest.mark.parametrize("prompt, kw, word", [
    ("", {}, "prompt"),
    ("   ", {}, "prompt"),
    ([], {}, "prompt"),
    ("ROMEO:", {"gen_length": 30, "block_length": 16}, "multiple of block_length"),
    ("ROMEO:", {"steps": 0}, "steps"),
    ("ROMEO:", {"steps": -4}, "steps"),
    ("ROMEO:", {"steps": 3, "gen_length": 32, "block_length": 16}, "divisible by the number of blocks"),
    ("ROMEO:", {"steps": 64, "gen_length": 32, "block_length": 32}, "at most gen_length"),
    ("ROMEO:", {"gen_length": 0}, "gen_length"),
    ("ROMEO:", {"cfg_scale": -1.0}, "cfg_scale"),
    ("word " * 300, {}, "context"),
])
def test_bad_input_names_the_parameter(toy, prompt, kw, word):
    with pytest.raises(ValueError, match=word):
        lk.generate(toy, prompt, lk.LowConfidence(), **{**KW, **kw})


def test_causal_model_only_decodes_left_to_right(toy):
    ar = lk.toy(causal=True)
    with pytest.raises(ValueError, match="Autoregressive"):
        lk.generate(ar, "ROMEO:\n", lk.LowConfidence(), **KW)
    out = lk.generate(ar, "ROMEO:\n", **KW)                       # default: Autoregressive
    assert out.stats["nfe"] == KW["gen_length"]


def test_seed_and_generator_conflict(toy):
    with pytest.raises(ValueError, match="seed or generator"):
        lk.generate(toy, "ROMEO:\n", seed=1, generator=torch.Generator().manual_seed(1), **KW)


def test_text_ends_at_the_first_eos():
    from labkit.output import until_stop as _until_stop
    assert _until_stop([5, 6, 1, 7, 1], (1,)) == [5, 6]
    assert _until_stop([5, 6], (1,)) == [5, 6]


def test_generate_leaves_the_global_rng_alone(toy):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    lk.generate(toy, "ROMEO:\n", lk.LowConfidence(temperature=1.0), seed=5, **KW)
    lk.toy(seed=3)
    assert torch.equal(torch.rand(3), expected)
