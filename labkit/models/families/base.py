"""The Family interface every model family implements, the placement of a network's weights on
one device or several, and the one checkpoint reader of labkit's native families."""
from __future__ import annotations

import json
from dataclasses import MISSING, fields
from pathlib import Path
from typing import ClassVar

import torch
from safetensors import safe_open
from torch import Tensor
from transformers.utils import cached_file


class FamilyError(ValueError):
    """A checkpoint labkit cannot decode, with what is wrong in one line."""


def config_fields(cls, config: dict, family: str) -> dict:
    """The config.json values of dataclass `cls`'s fields: rope keys also read from a re-saved
    transformers-5 `rope_parameters`; any rope scaling but the default refused; a field without a
    default that the config lacks is a FamilyError naming it."""
    kw = {f.name: config[f.name] for f in fields(cls) if config.get(f.name) is not None}
    rope = config.get("rope_parameters") or {}
    for key in ("rope_theta", "partial_rotary_factor"):
        if key not in kw and rope.get(key) is not None:
            kw[key] = rope[key]
    scaling = config.get("rope_scaling") or rope
    if scaling.get("rope_type", scaling.get("type", "default")) != "default":
        raise FamilyError(f"{family}: rope scaling {scaling} is not supported (only the default rope)")
    missing = [f.name for f in fields(cls) if f.default is MISSING and f.name not in kw]
    if missing:
        raise FamilyError(f"{family} config.json lacks {', '.join(missing)}; labkit assumes no default for these")
    return kw


class Family:
    """How one family's checkpoints are built and called. Subclasses override what differs."""
    name: ClassVar[str] = ""
    model_type: ClassVar[str] = ""            # the config's model_type it claims ("" for transformers' own)
    kind: ClassVar[str] = "masked"            # "masked": bidirectional denoiser; "causal": left to right
    noise: ClassVar[str] = "mask"             # the canvas starts as masks ("mask") or random tokens ("uniform")
    context_keys: ClassVar[tuple[str, ...]] = ("max_position_embeddings",)
    default_sampler: ClassVar[str | None] = None   # a registry name the lab opens this family with
    memory: ClassVar[str] = ""                # weights in bf16 of the published sizes, for README
    shift_logits: ClassVar[bool] = False      # the network's hidden i - 1 predicts token i (Dream)

    def claims(self, config: dict) -> bool:
        raise NotImplementedError

    def build(self, path: str | Path, config: dict, *, dtype: torch.dtype | None, device: torch.device,
              trust_remote_code: bool) -> torch.nn.Module:
        """The network with the checkpoint's weights, in eval mode."""
        raise NotImplementedError

    def tokenizer(self, source, trust_remote_code: bool = False):
        """The family's own way to load its published tokenizer, or None: transformers' AutoTokenizer."""
        return None

    def mask_id(self, config: dict, tokenizer) -> int | None:
        """The canvas's mask id: the config's `mask_token_id`, else the tokenizer's mask token."""
        if config.get("mask_token_id") is not None:
            return int(config["mask_token_id"])
        return tokenizer.mask_token_id

    def context_length(self, config: dict) -> int | None:
        return next((int(config[k]) for k in self.context_keys if config.get(k) is not None), None)

    def usable_context(self, net: torch.nn.Module, config: dict) -> int | None:
        """The tokens a row may hold, read from the built network where it differs from the config's
        context (a RoBERTa's first positions are reserved); by default the config's."""
        return self.context_length(config)

    def forward(self, net: torch.nn.Module, x: Tensor, attention_mask: Tensor | None) -> Tensor:
        """x (B, L) long, attention_mask (B, L) {0 pad, 1 token} or None → logits (B, L, V), the same
        for a row whatever the batch's padding: position i's logits predict token i for a masked
        family, token i + 1 (the next one) for a causal family (`kind == "causal"`)."""
        out = net(input_ids=x, attention_mask=attention_mask, **self.positions(x, attention_mask))
        return out.logits if hasattr(out, "logits") else out[0]

    def positions(self, x: Tensor, attention_mask: Tensor | None) -> dict:
        """Extra forward arguments for a left-padded batch: position ids that start at 0 on each
        row's first real token, so a row's answer does not depend on its padding."""
        if attention_mask is None:
            return {}
        return {"position_ids": (attention_mask.long().cumsum(-1) - 1).clamp_min(0)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# ---------------------------------------------------------------------------- several GPUs
# A native family's build() takes `device` as one torch.device or as a device map (accelerate's
# shape: module-name prefix → device; "auto" is filled in from the meta-device network). Each weight
# is read from its shard straight onto its own device, and accelerate's dispatch_model then adds the
# hooks that carry activations across devices; the network's output comes back to the input's device.

def plan(net: torch.nn.Module, device, dtype: torch.dtype | None, no_split: tuple[str, ...]):
    """(where, device_map): where(name) → the device of weight `name`; device_map is None for one
    device, else the map to dispatch with (see `dispatch`). `net` is the meta-device network."""
    if not isinstance(device, (str, dict)):
        return (lambda name: device), None
    if device == "auto":
        from accelerate import infer_auto_device_map  # the gpu extra: only for device_map='auto'

        device = infer_auto_device_map(net, no_split_module_classes=list(no_split), dtype=dtype or torch.bfloat16)
        if "disk" in device.values():
            raise FamilyError("device_map='auto': the model does not fit in the GPUs and CPU memory together "
                              "(accelerate would offload it to disk, which labkit does not do)")
    device_map = {k: torch.device(f"cuda:{v}" if isinstance(v, int) else v) for k, v in device.items()}
    names = [n for n, _ in net.named_parameters()] + [n for n, _ in net.named_buffers()]
    unplaced = [n for n in names if _prefix(device_map, n) is None]
    if unplaced:
        raise FamilyError(f"device_map places no device for {len(unplaced)} weights ({', '.join(unplaced[:3])}); "
                          f"map every module, or use the key '' for the rest")
    return (lambda name: device_map[_prefix(device_map, name)]), device_map


def _prefix(device_map: dict, name: str) -> str | None:
    """The longest key of device_map that is `name` or a module path above it ('' is above all)."""
    keys = [k for k in device_map if k == "" or name == k or name.startswith(k + ".")]
    return max(keys, key=len) if keys else None


def transformers_placement(device) -> dict:
    """from_pretrained's arguments for `device`: a device map goes to transformers (accelerate)."""
    if isinstance(device, str):
        return {"device_map": device}
    return {"device_map": {k: str(v) for k, v in device.items()}} if isinstance(device, dict) else {}


def dispatch(net: torch.nn.Module, device_map: dict | None) -> torch.nn.Module:
    """Hooks that move each module's inputs to its device (accelerate; one device: nothing to add)."""
    if device_map is None:
        return net
    from accelerate import dispatch_model  # the gpu extra: only with several devices

    return dispatch_model(net, device_map={k: str(v) for k, v in device_map.items()})


# ---------------------------------------------------------------------------- checkpoints
# The one reader of the native families. A checkpoint is a local folder or a hub id already in the
# local cache; its weights are model.safetensors or the shards model.safetensors.index.json names.
# Names and shapes are read from the files' headers and checked exactly against the meta-device
# network before any tensor is read; then each tensor is read on its own by safe_open, straight onto
# the device `plan` gives it, cast to the dtype asked for, and assigned into the network in place.

INDEX, SINGLE = "model.safetensors.index.json", "model.safetensors"


def fill(net: torch.nn.Module, path, family: str, *, device, dtype: torch.dtype | None, no_split: tuple[str, ...],
         tied: tuple[str, str] | None = None, fp32: tuple[str, ...] = ()) -> torch.nn.Module:
    """The meta-device `net` with the checkpoint's weights (no random init, no second copy), on `device`
    (one torch.device, or a device map: see `plan`; `no_split` names the modules "auto" keeps whole),
    in eval mode. dtype None keeps the checkpoint's; weights whose names end in `fp32` stay float32.
    tied = (head, embedding) parameter names: the checkpoint holds no head, which becomes the embedding."""
    where, device_map = plan(net, device, dtype, no_split)
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items() if not tied or k != tied[0]}
    found = tensor_shapes(shard_files(path, family), family, path)
    check_layout({k: shape for k, (_, shape) in found.items()}, expected, family, path)
    net.load_state_dict(read_tensors(found, where, dtype, fp32), strict=tied is None, assign=True)
    if tied:
        module, _, attr = tied[0].rpartition(".")
        setattr(net.get_submodule(module), attr, net.get_parameter(tied[1]))
    unread = [n for n, t in (*net.named_parameters(), *net.named_buffers()) if t.is_meta]
    if unread:
        raise FamilyError(f"{family}: no checkpoint file can hold some weights of the network ({_few(unread)}): "
                          f"the reader fills parameters and persistent buffers only")
    return dispatch(net, device_map).eval()


def checkpoint_file(path, name: str) -> Path | None:
    """File `name` of a local checkpoint folder, or of a hub id in the local cache; None when it has none."""
    if Path(path).is_dir():
        return Path(path, name) if Path(path, name).is_file() else None
    found = cached_file(str(path), name, _raise_exceptions_for_missing_entries=False)
    return Path(found) if found else None


def shard_files(path, family: str) -> list[Path]:
    """The checkpoint's safetensors files: the shards model.safetensors.index.json names, else model.safetensors."""
    index = checkpoint_file(path, INDEX)
    if index is None:
        single = checkpoint_file(path, SINGLE)
        if single is None:
            raise FamilyError(f"{family} checkpoint {str(path)!r} has neither {SINGLE} nor {INDEX}")
        return [single]
    weight_map = json.loads(index.read_text()).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise FamilyError(f"{family} checkpoint {str(path)!r}: {INDEX} has no weight_map {{name: shard file}}")
    names = sorted(set(weight_map.values()))
    files = {n: checkpoint_file(path, n) for n in names}
    absent = [n for n, f in files.items() if f is None]
    if absent:
        raise FamilyError(f"{family} checkpoint {str(path)!r}: shards named by {INDEX} are missing ({_few(absent)})")
    return list(files.values())


def tensor_shapes(files: list[Path], family: str, path) -> dict[str, tuple[Path, tuple[int, ...]]]:
    """name → (its file, its shape), from the files' headers alone (no tensor is read); a name held by two
    files is refused."""
    found: dict[str, tuple[Path, tuple[int, ...]]] = {}
    for file in files:
        with safe_open(str(file), framework="pt") as f:
            for name in f.keys():
                if name in found:
                    raise FamilyError(f"{family} checkpoint {str(path)!r}: {name} is in two shards "
                                      f"({found[name][0].name}, {file.name})")
                found[name] = (file, tuple(f.get_slice(name).get_shape()))
    return found


def check_layout(found: dict[str, tuple[int, ...]], expected: dict[str, tuple[int, ...]], family: str,
                 path) -> None:
    """A one-line FamilyError unless the checkpoint's names are exactly `expected`'s (it counts the missing
    and the unexpected ones and names the first of each: in the network's order, in name order) and every
    shape is the expected one (it names the first that is not, and counts them). Both map name → shape."""
    missing = [k for k in expected if k not in found]
    unexpected = sorted(k for k in found if k not in expected)
    if missing or unexpected:
        parts = ([f"lacks weights ({_few(missing)})"] if missing else []) + \
                ([f"has unexpected weights ({_few(unexpected)})"] if unexpected else [])
        raise FamilyError(f"{family} checkpoint {str(path)!r} does not match the {family} layout of its "
                          f"config.json: {'; '.join(parts)}")
    wrong = [k for k in expected if tuple(found[k]) != tuple(expected[k])]
    if wrong:
        k = wrong[0]
        raise FamilyError(f"{family} checkpoint {str(path)!r}: {k} has shape {tuple(found[k])}, config.json implies "
                          f"{tuple(expected[k])} ({len(wrong)} of {len(expected)} weights wrongly shaped)")


def read_tensors(found: dict[str, tuple[Path, tuple[int, ...]]], where, dtype: torch.dtype | None,
                 fp32: tuple[str, ...] = ()) -> dict[str, Tensor]:
    """Each tensor of `found` (name → (file, shape)) read on its own by safe_open straight onto its device
    where(name), floating ones cast to `dtype` (None: the checkpoint's; names ending in `fp32`: float32).
    The dict holds the tensors the network then takes over (load_state_dict(assign=True)): no second copy."""
    groups: dict[tuple[Path, torch.device], list[str]] = {}
    for name, (file, _) in found.items():
        groups.setdefault((file, torch.device(where(name))), []).append(name)
    state = {}
    for (file, device), names in groups.items():
        with safe_open(str(file), framework="pt", device=str(device)) as f:
            for name in names:
                t = f.get_tensor(name)
                cast = torch.float32 if name.endswith(fp32) else dtype
                state[name] = t.to(cast) if cast is not None and t.is_floating_point() else t
    return state


def _few(names: list[str]) -> str:
    """How many, and the first: "3: model.norm.weight, ..."."""
    return f"{len(names)}: {names[0]}" + (", ..." if len(names) > 1 else "")
