"""A generation's trace: the collected StepRecords as small per-step arrays, never logits."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .samplers.base import StepRecord


@dataclass
class Trace:
    prompt_len: int                      # canvas starts here (after left padding + prompt)
    mask_id: int
    init: torch.Tensor                   # (B, L) long: the canvas before step 0
    records: list[StepRecord] = field(default_factory=list)
    meta: dict = field(default_factory=dict)   # sampler repr, gen_length, block_length, ...

    def append(self, rec: StepRecord) -> None:
        """Keep a CPU copy in compact dtypes (int32 ids, float16 confidence)."""
        self.records.append(StepRecord(
            step=rec.step, block=rec.block, tokens=rec.tokens.to("cpu", torch.int32),
            candidates=rec.candidates.to("cpu", torch.int32),
            confidence=rec.confidence.to("cpu", torch.float16),
            committed=rec.committed.cpu(), edited=rec.edited.cpu(), seconds=rec.seconds,
            active=None if rec.active is None else rec.active.cpu(),
            pinned=None if rec.pinned is None else rec.pinned.cpu()))

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

    def edits(self) -> torch.Tensor:         # (S, B, L) bool
        return self._stack("edited")

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

    def tokens_per_step(self) -> torch.Tensor:
        """(S, B) long: tokens committed (plus edited) at each step."""
        return (self.committed() | self.edits()).sum(-1)

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
                          edited=self.edits().numpy(), active=self.active().numpy(),
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
