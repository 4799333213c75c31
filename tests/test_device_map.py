"""device_map: a published checkpoint's layers placed module by module (several GPUs with "auto").
This machine has one device, so these tests check the placement itself and that a mapped model
computes what the plain one does; the spread over GPUs is accelerate's dispatch_model."""
import pytest
import torch
from test_family_llada import tiny_config, tiny_weights, write_checkpoint
from torch import nn

import labkit as lk
from labkit.models.families.base import FamilyError, plan

pytest.importorskip("accelerate")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(8, 4)
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.head = nn.Linear(4, 8)


def test_each_weight_goes_to_the_longest_matching_module():
    with torch.device("meta"):
        net = Net()
    where, device_map = plan(net, {"": "cpu", "blocks.1": "meta", "blocks.10": "cuda:0"}, None, ("Linear",))
    assert where("blocks.1.weight") == torch.device("meta") and where("blocks.2.weight") == torch.device("cpu")
    assert where("head.bias") == torch.device("cpu") and set(device_map) == {"", "blocks.1", "blocks.10"}
    one, none = plan(net, torch.device("cpu"), None, ())
    assert one("anything") == torch.device("cpu") and none is None
    with pytest.raises(FamilyError, match=r"device_map places no device for 2 weights \(head.weight, head.bias\)"):
        plan(net, {"embed": "cpu", "blocks": "cpu"}, None, ())


@pytest.fixture(scope="module")
def llada(tmp_path_factory):
    cfg = tiny_config()
    return write_checkpoint(tmp_path_factory.mktemp("llada_map"), cfg, tiny_weights(cfg, seed=2))


def test_a_mapped_model_gives_the_plain_models_logits_and_answers(llada):
    plain = lk.load(str(llada))
    mapped = lk.load(str(llada), device_map={"model.transformer.blocks.0": "cpu", "": "cpu"})
    x = torch.tensor([[5, 6, 7, plain.mask_id, plain.mask_id]])
    assert torch.equal(plain(x), mapped(x))
    a = lk.generate(plain, "to be or not", gen_length=8, block_length=4, steps=8)
    b = lk.generate(mapped, "to be or not", gen_length=8, block_length=4, steps=8)
    assert torch.equal(a.ids, b.ids)


@pytest.mark.parametrize("kwargs, message", [
    ({"device_map": "everywhere"}, "device_map must be 'auto' or a dict"),
    ({"device_map": {}}, "device_map must be 'auto' or a dict"),
    ({"device_map": {"": "gpu"}}, "device must be"),
    ({"device_map": {"": "cpu"}, "device": "cuda"}, "not both"),
])
def test_bad_device_maps_are_one_line(llada, kwargs, message):
    with pytest.raises(ValueError, match=message):
        lk.load(str(llada), **kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_auto_without_a_gpu_says_so(llada):
    with pytest.raises(ValueError, match="device 'cuda' is not available"):
        lk.load(str(llada), device_map="auto")


def test_the_embedded_models_take_device_not_device_map():
    with pytest.raises(ValueError, match="device_map: the embedded model 'tiny' is small"):
        lk.load("tiny", device_map={"": "cpu"})


def test_a_transformers_model_takes_a_device_map_too(tmp_path):
    from test_families import bert

    lm = lk.load(str(bert(tmp_path / "bert")), device_map={"": "cpu"})
    assert lm.device == torch.device("cpu") and lm(torch.tensor([[5, 6]])).shape[-1] == 96


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_the_command_line_takes_device_map_auto(capsys):
    from labkit.cli.main import main

    assert main(["generate", "--model", "tiny", "--device-map", "auto", "ROMEO:"]) == 2
    assert "device 'cuda' is not available" in capsys.readouterr().err
