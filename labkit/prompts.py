"""What a prompt becomes before a loop encodes it: a string, a batch of strings, or chat messages
rendered by the model's chat template. Every loop reads prompts through here (the mask loop,
DiffusionGemma's recorder), so the loops need not import each other for it."""
from __future__ import annotations

from .models.handle import Denoiser


def prompt_texts(lm: Denoiser, prompt) -> list[str]:
    """A prompt as the list of texts the loop encodes: a string; a list of strings (a batch);
    chat messages ([{"role": "user", "content": ...}, ...]) or a list of such conversations,
    rendered by the model's chat template with the assistant's turn opened."""
    if isinstance(prompt, str) or _is_chat(prompt):
        prompt = [prompt]
    if not isinstance(prompt, (list, tuple)) or not prompt:
        raise ValueError("prompt must be a non-empty string, a list of strings, or chat messages "
                         "([{'role': 'user', 'content': '...'}])")
    texts = [chat_text(lm, p) if _is_chat(p) else p for p in prompt]
    for p in texts:
        if not isinstance(p, str) or not p.strip():
            raise ValueError(f"prompt must be non-empty text, got {p!r}")
    return texts


def _is_chat(p) -> bool:
    return isinstance(p, (list, tuple)) and len(p) > 0 and all(isinstance(m, dict) for m in p)


def chat_text(lm: Denoiser, messages) -> str:
    """Chat messages rendered by the tokenizer's chat template, ending where the assistant writes."""
    for m in messages:
        if set(m) - {"role", "content"} or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"a chat message must be {{'role': str, 'content': str}}, got {m!r}")
    if not getattr(lm.tokenizer, "chat_template", None):
        raise ValueError(f"model {lm.name!r} has no chat template: pass the prompt as text")
    return lm.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)


__all__ = ["chat_text", "prompt_texts"]
