"""FlashTile as an attention implementation of Hugging Face transformers,
for inference and training:

    import flashtile.hf
    flashtile.hf.use(model)          # every attention layer of the model

What a layer passes is honoured or refused, never ignored:

* `scaling` is the softmax scale; `is_causal` on the module (default True)
  gives causal attention, bottom-right aligned as FlashAttention-2's;
* `sliding_window=w` (Gemma-2, Mistral) is the window (w - 1, 0);
* `softcap` (Gemma-2's attn_logit_softcapping) is a score_mod
  softcap * tanh(score / softcap), the cap a run-time scalar (one kernel
  for every cap);
* `s_aux` (gpt-oss) are attention sinks;
* `attention_mask`, a 4-d (B or 1, 1, Sq, Sk or more) mask: a bool one is
  a mask_mod that reads it (padding and packed documents stay exact, and
  the forward skips the tiles it drops); an additive float one is added to
  the scores by a score_mod, as eager attention adds it (any bias it
  holds is honoured; a row it masks whole averages V, as eager's softmax
  does). transformers passes None where the mask is causal alone, which
  needs neither;
* dropout in training is refused (FlashTile has no attention dropout).

Gradients flow through flashtile.attention's backward (the compiler-built
backward family). The hooks here read per-call tensors and scalars that
are bound per call (module globals never set), as flashtile.varlen's do.
Imports torch at first use; `import flashtile` does not import this
module.
"""

from . import FlashTileError
from . import hooks as _hooks

__all__ = ["NAME", "attention_forward", "register", "use"]

NAME = "flashtile"

MASK = "mask"
mask = None  # int32 (B, 1, Sq, Sk): bound per call
BIAS = "bias"
bias = None  # float32 (B, 1, Sq, Sk): bound per call
SOFTCAP = "softcap"
softcap = _hooks.scalar(1.0, name="softcap")  # f32: bound per call


def padding_mask(b, h, q_idx, kv_idx):
    return mask[b, 0, q_idx, kv_idx] != 0


def softcapped(score, b, h, q_idx, kv_idx):
    return softcap * _hooks.tanh(score / softcap)


def biased(score, b, h, q_idx, kv_idx):
    return score + bias[b, 0, q_idx, kv_idx]


def softcapped_biased(score, b, h, q_idx, kv_idx):
    """Gemma-2's order: the cap, then the additive mask."""
    return softcap * _hooks.tanh(score / softcap) + bias[b, 0, q_idx, kv_idx]


# The score_mod of (softcap given, additive mask given).
_SCORE_MODS = {(False, False): None, (True, False): softcapped,
               (False, True): biased, (True, True): softcapped_biased}


def attention_forward(module, query, key, value, attention_mask,
                      scaling=None, dropout=0.0, softcap=None,
                      sliding_window=None, s_aux=None, arch=None, isa=None,
                      **kwargs):
    """transformers' attention interface: query (B, Hq, Sq, D), key and
    value (B, Hkv, Sk, D); returns (out (B, Sq, Hq, Dv), None). `arch` /
    `isa` as in flashtile.attention (register() binds them)."""
    import torch
    from .attention import _prepare, _run
    if dropout and getattr(module, "training", False):
        raise FlashTileError(
            f"attention dropout {dropout} in training: FlashTile has no "
            f"attention dropout; set the config's attention_dropout to 0")
    causal = bool(getattr(module, "is_causal", True))
    window = None
    if sliding_window:
        w = int(sliding_window)
        window = (w - 1, 0 if causal else w - 1)
    bindings = {}
    mask_mod = None
    additive = False
    if attention_mask is not None:
        B, Sq, Sk = query.shape[0], query.shape[2], key.shape[2]
        shape = tuple(attention_mask.shape)
        if (attention_mask.dim() != 4 or shape[0] not in (1, B) or
                shape[1] != 1 or shape[2] != Sq or shape[3] < Sk):
            raise FlashTileError(
                f"attention_mask must be a ({B} or 1, 1, {Sq}, >= {Sk}) "
                f"mask for query {tuple(query.shape)} and key "
                f"{tuple(key.shape)}, got {shape}")
        # A static cache's mask covers more keys than the call has.
        m = attention_mask[..., :Sk].expand(B, 1, Sq, Sk)
        if m.dtype == torch.bool:
            bindings[MASK] = m.to(torch.int32)
            mask_mod = padding_mask
        else:
            bindings[BIAS] = m.to(torch.float32)
            additive = True
    if softcap:
        # A Scalar, so that the trace takes it as a run-time argument.
        bindings[SOFTCAP] = _hooks.scalar(float(softcap), name=SOFTCAP)
    score_mod = _SCORE_MODS[(bool(softcap), additive)]
    sinks = None if s_aux is None else s_aux.float()
    compiled, _, args, kw = _prepare(
        query, key, value, causal, window, scaling, score_mod, mask_mod,
        sinks, arch, isa, bindings=bindings or None)
    kernel = compiled.runtime_kernel()
    out, _ = _run(compiled, args, kw, scaling, lambda: kernel(*args, **kw))
    return out, None


def register(name=NAME, arch=None, isa=None):
    """Registers attention_forward with transformers as `name` (and, where
    transformers has masks per implementation, SDPA's mask function: None
    where the mask is causal alone). `arch="sm_120"` runs the SM120
    configuration on the GPU at hand, as flashtile.attention's does."""
    import functools
    from transformers import AttentionInterface
    AttentionInterface.register(
        name, functools.partial(attention_forward, arch=arch, isa=isa))
    try:
        from transformers import AttentionMaskInterface
        from transformers.masking_utils import sdpa_mask
        AttentionMaskInterface.register(name, sdpa_mask)
    except ImportError:
        pass


def use(model, name=NAME, arch=None, isa=None):
    """Registers the implementation and sets it on `model`'s configs (the
    attention layers read config._attn_implementation at each call;
    transformers 5's set_attn_implementation reserves names holding
    "flash" for Hub kernels, so it is set directly)."""
    register(name, arch, isa)
    seen = set()
    stack = [model.config]
    while stack:
        config = stack.pop()
        if id(config) in seen:
            continue
        seen.add(id(config))
        config._attn_implementation = name
        for attr in ("text_config", "vision_config", "decoder", "encoder"):
            sub = getattr(config, attr, None)
            if sub is not None and hasattr(sub, "_attn_implementation"):
                stack.append(sub)
    return model
