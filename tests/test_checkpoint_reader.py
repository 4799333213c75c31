"""The one checkpoint reader of the native families (models/families/base.py: `fill` and its parts): tiny
random checkpoints in a folder or in the hub cache's layout, one file or several shards, read into a
meta-device network; a missing, an extra or a wrongly shaped tensor refused in one line that counts them
and names the first."""
from __future__ import annotations

import json

import pytest
import torch
from families_common import save_weights
from safetensors.torch import save_file
from torch import nn

import labkit as lk
from labkit.models.families.base import FamilyError, checkpoint_file, fill, read_tensors, shard_files, tensor_shapes

CPU = torch.device("cpu")


class Net(nn.Module):
    """embed (8, 4), three blocks (4, 4), head (8, 4), a float buffer and an integer one."""

    def __init__(self, tied: bool = False):
        super().__init__()
        self.embed = nn.Embedding(8, 4)
        self.blocks = nn.ModuleList(nn.Linear(4, 4, bias=False) for _ in range(3))
        self.head = nn.Linear(4, 8, bias=False)
        self.register_buffer("router_bias", torch.zeros(8))
        self.register_buffer("counts", torch.zeros(2, dtype=torch.long))
        if tied:
            self.head.weight = self.embed.weight


def weights(seed: int = 0, tied: bool = False) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    sd = {"embed.weight": torch.randn(8, 4, generator=g), "head.weight": torch.randn(8, 4, generator=g),
          "router_bias": torch.randn(8, generator=g), "counts": torch.tensor([3, 4])}
    sd |= {f"blocks.{i}.weight": torch.randn(4, 4, generator=g) for i in range(3)}
    if tied:
        del sd["head.weight"]
    return sd


def write(folder, sd: dict, shards: int = 1):
    """sd as model.safetensors, or as `shards` files named by model.safetensors.index.json."""
    folder.mkdir(parents=True, exist_ok=True)
    save_weights(folder, sd, shards)
    return folder


def read(path, tied: bool = False, **kw) -> Net:
    with torch.device("meta"):
        net = Net(tied)
    kw = {"device": CPU, "dtype": None, "no_split": ("Linear",), **kw}
    return fill(net, path, "Tiny", tied=("head.weight", "embed.weight") if tied else None, **kw)


def hub_snapshot(cache, repo: str):
    """The folder of `repo`'s snapshot in a hub cache laid out as huggingface_hub keeps it."""
    root, commit = cache / f"models--{repo.replace('/', '--')}", "0123456789abcdef0123456789abcdef01234567"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    return root / "snapshots" / commit


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def test_a_checkpoint_fills_the_network_in_place(tmp_path):
    sd = weights()
    net = read(write(tmp_path, sd))
    got = net.state_dict()
    assert set(got) == set(sd) and all(torch.equal(got[k], sd[k]) for k in sd)
    assert not net.training and not any(p.is_meta for p in net.parameters())
    half = read(tmp_path, dtype=torch.bfloat16, fp32=("router_bias",))
    assert half.head.weight.dtype == torch.bfloat16 and half.router_bias.dtype == torch.float32
    assert half.counts.dtype == torch.long and torch.equal(half.counts, sd["counts"])   # integers are never cast
    torch.testing.assert_close(half.blocks[2].weight.float(), sd["blocks.2.weight"], atol=1e-2, rtol=1e-2)


def test_several_shards_read_as_one_file(tmp_path):
    sd = weights(1)
    one, three = read(write(tmp_path / "one", sd)), read(write(tmp_path / "three", sd, shards=3))
    assert len(shard_files(tmp_path / "three", "Tiny")) == 3
    assert all(torch.equal(a, b) for a, b in zip(one.state_dict().values(), three.state_dict().values()))
    (tmp_path / "three" / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(FamilyError, match=r"shards named by model\.safetensors\.index\.json are missing "
                                          r"\(1: model-00002-of-00003\.safetensors\)"):
        read(tmp_path / "three")


@pytest.mark.parametrize("drop, message", [
    (["blocks.1.weight"], r"lacks weights \(1: blocks\.1\.weight\)$"),
    (["blocks.0.weight", "head.weight"], r"lacks weights \(2: blocks\.0\.weight, \.\.\.\)$"),
])
def test_a_missing_tensor_is_counted_and_named(tmp_path, drop, message):
    sd = {k: v for k, v in weights().items() if k not in drop}
    with pytest.raises(FamilyError, match=r"^Tiny checkpoint .* does not match the Tiny layout of its config\.json: "
                                          + message):
        read(write(tmp_path, sd))


def test_an_extra_tensor_is_counted_and_named(tmp_path):
    sd = {**weights(), "blocks.3.weight": torch.zeros(4, 4)}
    with pytest.raises(FamilyError, match=r"config\.json: has unexpected weights \(1: blocks\.3\.weight\)$"):
        read(write(tmp_path, sd))
    sd["blocks.0.bias"] = sd.pop("blocks.0.weight")[0]          # a rename: both sides named
    with pytest.raises(FamilyError, match=r"lacks weights \(1: blocks\.0\.weight\); "
                                          r"has unexpected weights \(2: blocks\.0\.bias, \.\.\.\)$"):
        read(write(tmp_path / "renamed", sd))


def test_a_wrong_shape_is_named_before_anything_is_read(tmp_path, monkeypatch):
    sd = {**weights(), "blocks.1.weight": torch.zeros(3, 4), "head.weight": torch.zeros(4, 8)}
    write(tmp_path, sd)
    import labkit.models.families.base as base

    monkeypatch.setattr(base, "read_tensors", lambda *a, **k: pytest.fail("a tensor was read before the check"))
    with pytest.raises(FamilyError, match=r"^Tiny checkpoint .*: blocks\.1\.weight has shape \(3, 4\), config\.json "
                                          r"implies \(4, 4\) \(2 of 7 weights wrongly shaped\)$"):
        read(tmp_path)


def test_a_name_in_two_shards_and_a_folder_without_weights_are_refused(tmp_path):
    sd = weights()
    write(tmp_path / "dup", sd, shards=2)
    save_file({"embed.weight": sd["embed.weight"], "blocks.0.weight": sd["blocks.0.weight"]},
              str(tmp_path / "dup" / "model-00002-of-00002.safetensors"))
    with pytest.raises(FamilyError, match=r"blocks\.0\.weight is in two shards "
                                          r"\(model-00001-of-00002\.safetensors, model-00002-of-00002\.safetensors\)"):
        read(tmp_path / "dup")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FamilyError, match="has neither model.safetensors nor model.safetensors.index.json"):
        read(tmp_path / "empty")
    (tmp_path / "empty" / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    with pytest.raises(FamilyError, match="model.safetensors.index.json has no weight_map"):
        read(tmp_path / "empty")


def test_a_tied_head_is_the_embedding_and_is_not_in_the_checkpoint(tmp_path):
    sd = weights(2, tied=True)
    net = read(write(tmp_path / "tied", sd), tied=True)
    assert net.head.weight is net.embed.weight and torch.equal(net.head.weight, sd["embed.weight"])
    with pytest.raises(FamilyError, match=r"has unexpected weights \(1: head\.weight\)"):
        read(write(tmp_path / "both", weights(2)), tied=True)


def test_a_weight_no_file_can_hold_is_refused(tmp_path):
    class Scratch(Net):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.zeros(3), persistent=False)

    with torch.device("meta"):
        net = Scratch()
    with pytest.raises(FamilyError, match=r"no checkpoint file can hold some weights of the network \(1: table\)"):
        fill(net, write(tmp_path, weights()), "Tiny", device=CPU, dtype=None, no_split=())


def test_each_tensor_goes_to_the_device_its_name_is_placed_on(tmp_path):
    sd = weights()
    found = tensor_shapes(shard_files(write(tmp_path, sd, shards=2), "Tiny"), "Tiny", tmp_path)
    assert {k: shape for k, (_, shape) in found.items()} == {k: tuple(v.shape) for k, v in sd.items()}
    asked = []
    state = read_tensors(found, lambda name: asked.append(name) or CPU, torch.float64, fp32=("bias",))
    assert sorted(asked) == sorted(sd) and state["embed.weight"].dtype == torch.float64
    assert state["router_bias"].dtype == torch.float32 and state["counts"].dtype == torch.long
    pytest.importorskip("accelerate")
    mapped = read(tmp_path, device={"": CPU, "blocks.1": CPU})
    assert torch.equal(mapped.blocks[1].weight, sd["blocks.1.weight"])


@pytest.mark.parametrize("shards", [1, 2])
def test_a_hub_id_in_the_local_cache_reads_as_its_folder(tmp_path, hub_cache, shards):
    sd = weights(3)
    write(hub_snapshot(hub_cache, "lab/tiny"), sd, shards=shards)
    assert checkpoint_file("lab/tiny", "config.json") is None
    net = read("lab/tiny")
    assert all(torch.equal(net.state_dict()[k], v) for k, v in sd.items())
    with pytest.raises(FamilyError, match="'lab/elsewhere' has neither model.safetensors"):
        read("lab/elsewhere")


def test_llada2_loads_from_the_hub_cache(tmp_path, hub_cache):
    from test_family_llada2 import write_checkpoint

    folder = tmp_path / "llada2"
    sd = write_checkpoint(folder, shards=2)
    write_checkpoint(hub_snapshot(hub_cache, "lab/llada2-tiny"), sd, shards=2)
    x = torch.tensor([[5, 17, 3, 40, 92, 92, 8]])
    cached = lk.load("lab/llada2-tiny")
    assert cached.family.name == "LLaDA2"
    torch.testing.assert_close(cached(x), lk.load(str(folder))(x), atol=0, rtol=0)
