"""Load a denoiser: the embedded tiny model, a local folder, or a hub model (on a machine that
has its weights). `load()` is the only place that knows special ids, padding side and
`trust_remote_code`."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors import SafetensorError

from .. import threads
from .formats import PromptFormat
from .handle import DLM, Denoiser

# transformers, and what imports it (tiny_net, tokenizer, families), is imported inside the functions
# that load a model: `import labkit` stays without it (tiny_net's transformers classes take about 2 s
# more to import), and the first load brings it.
EMBEDDED = {name: name for name in (                   # name → folder under labkit/weights/
    "tiny", "tiny-ar", "tiny-cap",                                                   # Shakespeare
    "tiny-sudoku", "tiny-sudoku-ar", "tiny-sudoku-ar-solver",                        # labkit.tasks
    "tiny-facts", "tiny-facts-ar", "tiny-add", "tiny-add-ar",
    "tiny-sudoku-rl", "tiny-sudoku-rl-elbo", "tiny-sudoku-ar-rl",                    # after RL
    "tiny-sudoku-from-ar",                                                           # converted from its AR twin
    "tiny-block4-from-ar", "tiny-block4", "tiny-block16", "tiny-block4-edit",        # block diffusion
    "tiny-llada21")}                                                                 # ... decoding in parallel
MASK_TOKEN_STRINGS = ("<|mdm_mask|>", "<mask>", "[MASK]", "<|mask|>")   # LLaDA, ours, BERT, Dream
EOT_TOKEN_STRINGS = ("<|eot_id|>",       # end of turn: LLaDA's Llama-style template
                     "<|im_end|>",       # Dream's ChatML
                     "<|role_end|>")     # LLaDA2.x (from third-party descriptions of its template)


def weights_dir() -> Path:
    return Path(__file__).parent.parent / "weights"


def model_folder(name: str | Path) -> Path:
    """The folder a model name points to: an embedded model's under labkit/weights/, else the
    path itself (a hub id gives a path that does not exist)."""
    return weights_dir() / EMBEDDED[name] if name in EMBEDDED else Path(str(name)).expanduser()


def load(name_or_path: str = "tiny", device: str | torch.device = "cpu",
         dtype: torch.dtype | None = None, trust_remote_code: bool = False, device_map=None) -> Denoiser:
    """`load("tiny")` gives the embedded model; a folder with config.json loads that folder; any
    other string goes to `transformers` (a hub id needs its weights in the local cache). A
    published checkpoint loads in its own dtype, and in bfloat16 on a GPU unless `dtype` says
    otherwise; labkit's native families put its weights straight on `device` (transformers'
    own classes load on the CPU first).

    device_map="auto" spreads a published checkpoint's layers over every visible GPU (accelerate
    decides where by their memory), or a dict {module name: device} places them by hand ('' for
    the rest); each weight goes straight to its device, and the logits come back to the first."""
    if not isinstance(name_or_path, (str, Path)) or not str(name_or_path).strip():
        raise ValueError(f"model must be 'tiny' or a model folder, got {name_or_path!r}")
    if device_map is not None and str(device) != "cpu":
        raise ValueError(f"pass device ({device!r}) or device_map ({device_map!r}), not both")
    device = check_device(device) if device_map is None else check_device_map(device_map)
    threads.apply()                              # labkit's CPU thread policy (labkit.threads)
    name = str(name_or_path)
    if name in EMBEDDED:
        path = weights_dir() / EMBEDDED[name]
        if not path.is_dir():
            raise FileNotFoundError(f"the embedded model {name!r} is missing from {path}; "
                                    f"reinstall labkit or run `labkit train`")
    else:
        path = Path(name).expanduser()
        if not path.exists() and ("/" not in name or name.startswith((".", "/", "~"))):
            known = ", ".join(repr(k) for k in EMBEDDED)
            raise ValueError(f"unknown model {name!r}: use one of {known}, a local model folder, "
                             f"or a hub id such as 'GSAI-ML/LLaDA-8B-Instruct'")
    if path.is_dir() and not (path / "config.json").is_file():
        raise FileNotFoundError(f"model folder {path} has no config.json")
    cfg, source = _config(name, path)
    if cfg.get("model_type") == "labkit-tiny-dlm":
        if device_map is not None:
            raise ValueError(f"device_map: the embedded model {name!r} is small; place it with device=")
        return _to(_load_tiny(path, name), device, dtype)
    on_gpu = device_map == "auto" or isinstance(device, torch.device) and device.type == "cuda"
    if dtype is None and on_gpu:
        dtype = torch.bfloat16                   # the published models' own precision
    return _load_transformers(name, path, source, cfg, trust_remote_code, dtype, device)


def check_device_map(device_map):
    """"auto" (needs CUDA and accelerate) or a dict {module name prefix: device}, each device checked."""
    if device_map == "auto":
        if not torch.cuda.is_available():
            check_device("cuda")                 # the one-line reason there is no GPU
    elif isinstance(device_map, dict) and device_map:
        device_map = {str(k): check_device(f"cuda:{v}" if isinstance(v, int) else v) for k, v in device_map.items()}
    else:
        raise ValueError(f"device_map must be 'auto' or a dict {{module name: device}}, got {device_map!r}")
    try:
        import accelerate  # noqa: F401  (the gpu extra: checked for here, not required)
    except ImportError:
        raise ValueError('device_map needs the accelerate package: pip install "labkit[gpu]" (or accelerate)') from None
    return device_map


def check_device(device) -> torch.device:
    """A torch.device this machine has, or a one-line ValueError saying what is available."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'mps', got {device!r}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch is a CPU build" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise ValueError(f"device {str(dev)!r} is not available: {why}; use device 'cpu' "
                             f"(README.md, 'GPU', says how to install a CUDA build)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(dev)!r} is not available: this machine has "
                             f"{torch.cuda.device_count()} CUDA device(s), cuda:0 to "
                             f"cuda:{torch.cuda.device_count() - 1}")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device 'mps' is not available on this machine; use device 'cpu'")
    return dev


def embedded_kind(name: str) -> str | None:
    """"causal" or "masked" for an embedded model (read off its config, no weights loaded);
    None for anything else."""
    if name not in EMBEDDED:
        return None
    cfg = model_folder(name) / "config.json"
    if not cfg.is_file():
        return None
    return "causal" if json.loads(cfg.read_text()).get("is_causal") else "masked"


def _to(lm: DLM, device, dtype) -> DLM:
    lm.net.to(device=device, dtype=dtype) if dtype else lm.net.to(device)
    lm.net.eval()
    return lm


@contextmanager
def _quiet_loading():
    """No 'Loading weights' progress bar and no warnings from transformers' loaders (its tokenizer
    loader warns about every model type it does not know); the user's settings are restored."""
    from transformers.utils import logging as hf_logging  # transformers: see EMBEDDED

    was_on, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if was_on:
            hf_logging.enable_progress_bar()


def _load_tiny(path: Path, name: str) -> DLM:
    from .tiny_net import TinyDLM, register  # transformers: see EMBEDDED
    from .tokenizer import load_tokenizer

    register()
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"checkpoint {weights} is missing")
    try:
        with _quiet_loading():
            net = TinyDLM.from_pretrained(path)
    except (SafetensorError, OSError, RuntimeError, ValueError, KeyError) as e:
        raise ValueError(f"checkpoint in {path} is corrupt or incomplete: {str(e)[:200]}") from None
    try:
        return tiny_handle(net, load_tokenizer(path), name)
    except (TypeError, ValueError) as e:
        raise ValueError(f"config.json of {path}: prompt_formats are not valid: {e}") from None


def tiny_handle(net, tokenizer, name: str) -> DLM:
    """The DLM handle of a labkit TinyDLM network and its tokenizer (loaded, or built in memory)."""
    fmts = tuple(PromptFormat(**f) for f in getattr(net.config, "prompt_formats", None) or ())
    return DLM(net=net, tokenizer=tokenizer, mask_id=tokenizer.mask_token_id, eos_id=tokenizer.eos_token_id,
               pad_id=tokenizer.pad_token_id, name=name, kind="causal" if net.config.is_causal else "masked",
               max_length=net.config.max_position_embeddings, formats=fmts)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model",
                   "spiece.model")


def _config(name: str, path: Path) -> tuple[dict, str]:
    """config.json of a local folder or of a hub id in the local cache, and where it was read."""
    if path.is_dir():
        try:
            return json.loads((path / "config.json").read_text()), str(path)
        except ValueError as e:
            raise ValueError(f"{path / 'config.json'} is corrupt: {e}") from None
    from transformers.utils import cached_file  # transformers: see EMBEDDED

    try:
        file = cached_file(name, "config.json")
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot load model {name!r}: no local folder of that name and no hub model of that id "
                         f"in the local cache ({str(e).splitlines()[0][:200]})") from None
    return json.loads(Path(file).read_text()), name


def _tokenizer(source: str, path: Path, trust_remote_code: bool):
    from transformers import AutoTokenizer  # transformers: see EMBEDDED

    if path.is_dir() and not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise ValueError(f"model folder {path} has no tokenizer files (one of {', '.join(TOKENIZER_FILES)}): "
                         f"save the tokenizer next to the weights (tokenizer.save_pretrained)")
    try:
        with _quiet_loading():
            return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot load the tokenizer of {source!r}: {str(e).splitlines()[0][:300]}") from None


def _special_ids(name: str, family, cfg: dict, tok) -> dict:
    """mask, pad, EOS and end-of-turn ids, checked against each other, and every further id a list-valued
    eos_token_id names (DiffusionGemma's [1, 106]: 106 ends a turn) as extra stop ids."""
    mask_id = _mask_id(name, family, cfg, tok)
    eos_ids = config_ids(cfg, "eos_token_id")
    eos = tok.eos_token_id if tok.eos_token_id is not None else next(iter(eos_ids), None)
    pad = tok.pad_token_id if tok.pad_token_id is not None else next(iter(config_ids(cfg, "pad_token_id")), None)
    pad = pad if pad is not None else eos
    if pad is None:
        raise ValueError(f"model {name!r}: neither pad_token_id nor eos_token_id is set (tokenizer or config.json), "
                         f"so labkit has no id to pad a batch with; set pad_token_id in config.json or give the "
                         f"tokenizer a pad token (tokenizer.pad_token = ...; tokenizer.save_pretrained)")
    if mask_id is not None and pad == mask_id:
        raise ValueError(f"model {name!r}: pad id equals mask id ({pad}); batching would break")
    vocab = tok.get_vocab()
    eot = next((vocab[s] for s in EOT_TOKEN_STRINGS if s in vocab), None)
    extra = tuple(dict.fromkeys(i for i in eos_ids if i not in (eos, eot)))
    return {"mask_id": -1 if mask_id is None else mask_id, "pad_id": pad, "eos_id": eos, "eot_id": eot,
            "extra_stop_ids": extra}


def _mask_id(name: str, family, cfg: dict, tok) -> int | None:
    """The canvas's mask id: the family's, else a known mask token of the tokenizer; None for a causal model
    or uniform noise; a masked model with none is refused."""
    mask_id = family.mask_id(cfg, tok) if family.kind == "masked" else None
    if family.kind == "masked" and family.noise == "mask" and mask_id is None:
        for s in MASK_TOKEN_STRINGS:
            i = tok.convert_tokens_to_ids(s)
            if isinstance(i, int) and i != tok.unk_token_id:
                mask_id = i
                break
        if mask_id is None:
            raise ValueError(f"model {name!r} has no mask token (config mask_token_id, tokenizer mask token); "
                             f"a masked diffusion model needs one")
    return mask_id


def config_ids(cfg: dict, key: str) -> list[int]:
    """The ids config.json gives `key` (eos_token_id, pad_token_id, ...): at the top level and in a nested
    text_config (DiffusionGemma and other multimodal configs keep the text model's ids there), top level
    first, without repeats; a list-valued id (Gemma's eos_token_id [1, 106]) is kept whole."""
    found = []
    for level in (cfg, cfg.get("text_config") or {}):
        value = level.get(key)
        found += [] if value is None else [int(i) for i in (value if isinstance(value, (list, tuple)) else [value])]
    return list(dict.fromkeys(found))


def _load_transformers(name: str, path: Path, source: str, cfg: dict, trust_remote_code: bool, dtype,
                       device) -> DLM:
    """A checkpoint in a published format, through its family (models.families)."""
    from .families import FamilyError, detect  # transformers: see EMBEDDED

    family = detect(cfg)
    tok = family.tokenizer(source, trust_remote_code) or _tokenizer(source, path, trust_remote_code)
    ids = _special_ids(name, family, cfg, tok)
    try:
        with _quiet_loading():
            net = family.build(source, cfg, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
    except FamilyError:
        raise
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise ValueError(f"cannot load weights of {name!r} ({family.name}): {str(e).splitlines()[0][:300]}") from None
    except (AttributeError, ImportError, TypeError, NameError) as e:
        if not trust_remote_code:
            raise
        raise _remote_code_error(name, family, e) from None
    lm = DLM(net=net, tokenizer=tok, name=name, kind=family.kind, max_length=family.usable_context(net, cfg),
             family=family, **ids)
    _check_vocabulary(lm, cfg)
    return lm


def _remote_code_error(name: str, family, e: Exception) -> ValueError:
    """One line for a checkpoint whose own modeling code (trust_remote_code) fails under this
    transformers: most were written for transformers 4.x."""
    import transformers  # see EMBEDDED

    from .families import FAMILIES  # transformers: see EMBEDDED

    natives = ", ".join(f.name for f in FAMILIES)
    first = (str(e).splitlines() or [""])[0][:200]
    return ValueError(f"the remote code of {name!r} ({family.name}) does not run with transformers "
                      f"{transformers.__version__} ({type(e).__name__}: {first}); labkit loads these families "
                      f"without remote code: {natives}; otherwise install the transformers version its model card names")


def _check_vocabulary(lm: DLM, cfg: dict) -> None:
    """One forward pass at load: the logits must have the vocabulary's size, and every id the
    tokenizer makes must be a row of the embedding table."""
    x = torch.tensor([[lm.pad_id, lm.pad_id]], device=lm.device)
    width = lm(x).shape[-1]
    n_tok = len(lm.tokenizer)
    if width < n_tok:
        raise ValueError(f"model {lm.name!r} gives {width} logits per position but its tokenizer has {n_tok} tokens: "
                         f"a headless checkpoint, or a tokenizer larger than the embedding table")
    expected = cfg.get("vocab_size")
    if expected is not None and width < expected:
        raise ValueError(f"model {lm.name!r} gives {width} logits per position, not its vocab_size {expected}")


def toy(seed: int = 0, causal: bool = False) -> DLM:
    """A randomly initialised 2-layer model with the embedded tokenizer: for tests that need a
    working denoiser but no trained weights."""
    from .tiny_net import TinyDLM, TinyDLMConfig  # transformers: see EMBEDDED
    from .tokenizer import load_tokenizer

    tok = load_tokenizer(weights_dir() / "tiny")
    cfg = TinyDLMConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, is_causal=causal, mask_token_id=tok.mask_token_id)
    with torch.random.fork_rng():                 # seed the init without touching the caller's RNG
        torch.manual_seed(seed)
        net = TinyDLM(cfg).eval()
    return DLM(net=net, tokenizer=tok, mask_id=tok.mask_token_id, eos_id=tok.eos_token_id,
               pad_id=tok.pad_token_id, name="toy", kind="causal" if causal else "masked",
               max_length=cfg.max_position_embeddings)
