"""A generation's trace: the collected StepRecords as small per-step arrays, never logits."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from .samplers.base import StepRecord


def _compact(rec: StepRecord, device) -> StepRecord:
    def move(t, dtype=None):
        return None if t is None else t.to(device, dtype) if dtype is not None else t.to(device)
    return StepRecord(step=rec.step, block=rec.block, tokens=move(rec.tokens, torch.int32),
                      candidates=move(rec.candidates, torch.int32), confidence=move(rec.confidence, torch.float16),
                      committed=move(rec.committed), edited=move(rec.edited), seconds=rec.seconds,
                      active=move(rec.active), pinned=move(rec.pinned))


@dataclass
class Trace:
    prompt_len: int                      # canvas starts here (after left padding + prompt)
    mask_id: int
    init: torch.Tensor                   # (B, L) long: the canvas before step 0
    records: list[StepRecord] = field(default_factory=list)
    meta: dict = field(default_factory=dict)   # sampler repr, gen_length, block_length, ...

    def append(self, rec: StepRecord, to_host: bool = True) -> None:
        """Keep a copy in compact dtypes (int32 ids, float16 confidence), on the CPU; with
        to_host=False on the record's device until `to_host()` (no device read per step)."""
        self.records.append(_compact(rec, "cpu" if to_host else rec.tokens.device))

    def to_host(self) -> None:
        """Move records kept on a device to the CPU: one stacked copy per field (a no-op for
        records already there)."""
        away = [i for i, r in enumerate(self.records) if r.tokens.device.type != "cpu"]
        if not away:
            return
        moved = {}
        for name in ("tokens", "candidates", "confidence", "committed", "edited", "active", "pinned"):
            parts = [getattr(self.records[i], name) for i in away]
            if all(p is not None for p in parts):
                moved[name] = torch.stack(parts).cpu().unbind(0)          # (S, ...) in one copy
            elif any(p is not None for p in parts):
                moved[name] = [None if p is None else p.cpu() for p in parts]
            else:
                moved[name] = [None] * len(away)
        for j, i in enumerate(away):
            self.records[i] = replace(self.records[i], **{k: v[j] for k, v in moved.items()})

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def __iter__(self):
        return iter(self.records)

    @property
    def nfe(self) -> int:
        """Forward passes: one per record."""
        return len(self.records)

    def _stack(self, name: str) -> torch.Tensor:
        if not self.records:
            return self.init.new_empty((0, *self.init.shape))
        return torch.stack([getattr(r, name) for r in self.records])

    def tokens(self) -> torch.Tensor:        # (S, B, L)
        return self._stack("tokens")

    def candidates(self) -> torch.Tensor:    # (S, B, L)
        return self._stack("candidates")

    def confidence(self) -> torch.Tensor:    # (S, B, L) float16, nan where not scored
        return self._stack("confidence")

    def committed(self) -> torch.Tensor:     # (S, B, L) bool
        return self._stack("committed")

    def edited(self) -> torch.Tensor:        # (S, B, L) bool: token → different token at each step
        return self._stack("edited")

    def edits(self) -> torch.Tensor:         # (S, B, L) bool
        """Deprecated name of `edited()` (notebooks' stored cells call it); use `edited()`."""
        return self.edited()

    def active(self) -> torch.Tensor:        # (S, B) bool: rows each step applied to
        B = self.init.shape[0]
        return torch.stack([torch.ones(B, dtype=torch.bool) if r.active is None else r.active
                            for r in self.records]) if self.records else torch.zeros(0, B, dtype=torch.bool)

    def row_nfe(self) -> torch.Tensor:
        """(B,) long: forward passes each row took part in (rows of a batch finish independently)."""
        return self.active().sum(0)

    @property
    def has_pins(self) -> bool:
        """The run had controls, so its records carry `pinned` (cheap: no stacking)."""
        return bool(self.records) and self.records[0].pinned is not None

    def pinned(self) -> torch.Tensor | None:  # (S, B, L) bool: fixed by controls; None without controls
        return self._stack("pinned") if self.has_pins else None

    def read(self) -> torch.Tensor:          # (S, B, L): the canvas each step read (init, then each step's tokens)
        """The state before each step: what the model saw when it decided (a replay's inputs)."""
        return torch.cat([self.init[None], self.tokens()[:-1]]) if self.records else self.init.new_empty((0, *self.init.shape))

    def masked(self) -> torch.Tensor:        # (S, B, L) bool: still a mask after each step
        return self.tokens() == self.mask_id

    @property
    def final(self) -> torch.Tensor:         # (B, L)
        return self.records[-1].tokens if self.records else self.init

    def commit_step(self) -> torch.Tensor:
        """(B, L) long: the step at which each position was first committed; -1 if never
        (prompt, padding, pinned positions)."""
        c = self.committed()                                          # (S, B, L)
        if len(c) == 0:
            return torch.full(self.init.shape, -1, dtype=torch.long)
        first = c.long().argmax(0)                                    # (B, L)
        return torch.where(c.any(0), first, torch.full_like(first, -1))

    # --- save / load: one .npz of arrays plus JSON metadata -----------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trace to `path` (".npz" is added when missing); returns the file written."""
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"trace path {str(path)!r} is a folder; give a file name such as {str(path / 'run.npz')!r}")
        arrays = {"init": self.init.numpy().astype(np.int32)}
        if self.records:
            arrays.update(tokens=self.tokens().numpy(), candidates=self.candidates().numpy(),
                          confidence=self.confidence().numpy(), committed=self.committed().numpy(),
                          edited=self.edited().numpy(), active=self.active().numpy(),
                          **({"pinned": self.pinned().numpy()} if self.has_pins else {}),
                          step=np.array([r.step for r in self.records]),
                          block=np.array([r.block for r in self.records]),
                          seconds=np.array([r.seconds for r in self.records]))
        header = {"prompt_len": self.prompt_len, "mask_id": self.mask_id, "meta": self.meta,
                  "format": "labkit-trace-1"}
        np.savez_compressed(path, header=np.array(json.dumps(header)), **arrays)
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        try:
            with np.load(path, allow_pickle=False) as npz:
                z = {k: npz[k] for k in npz.files}           # decompress each array once
            header = json.loads(str(z["header"]))
        except (OSError, ValueError, KeyError, IndexError, AttributeError, TypeError) as e:
            raise ValueError(f"{path} is not a labkit trace file ({type(e).__name__}: {e})") from None
        if header.get("format") != "labkit-trace-1":
            raise ValueError(f"{path}: unknown trace format {header.get('format')!r}")
        t = cls(prompt_len=header["prompt_len"], mask_id=header["mask_id"],
                init=torch.from_numpy(z["init"]).long(), meta=header["meta"])
        if "tokens" in z:
            for i in range(len(z["step"])):
                t.records.append(StepRecord(
                    step=int(z["step"][i]), block=int(z["block"][i]),
                    tokens=torch.from_numpy(z["tokens"][i]), candidates=torch.from_numpy(z["candidates"][i]),
                    confidence=torch.from_numpy(z["confidence"][i]),
                    committed=torch.from_numpy(z["committed"][i]), edited=torch.from_numpy(z["edited"][i]),
                    seconds=float(z["seconds"][i]),
                    active=torch.from_numpy(z["active"][i]) if "active" in z else None,
                    pinned=torch.from_numpy(z["pinned"][i]) if "pinned" in z else None))
        return t
