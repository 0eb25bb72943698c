"""The float64 attention every GPU check compares FlashTile with.

attention() takes (B, H, S, D) tensors of any float type (GQA: K and V may
have fewer heads, H_q a multiple of H_kv) and returns float64 O (B, H_q,
S_q, D_v) and LSE (B, H_q, S_q). Masks are bottom-right aligned, as
FlashAttention-2's: query row i sits at key position i + S_k - S_q. A row
that sees no key gives O = 0 and LSE = -inf. The hooks see broadcastable
int64 index tensors of shape (B, 1, 1, 1) for the batch, (1, h, 1, 1) for
a chunk of heads, (1, 1, S_q, 1) and (1, 1, 1, S_k) for the positions, as
FlexAttention's score_mod(score, b, h, q_idx, kv_idx) and
mask_mod(b, h, q_idx, kv_idx); score_mod sees the scaled scores.
attention_grads() is the backward's reference: autograd through it.
"""

import math

import torch

# The reference works on at most this many scores at a time (heads are
# taken in chunks), so that S = 16k fits in memory.
CHUNK_ELEMENTS = 1 << 28


def visible(sq, sk, causal=False, window=(-1, -1), device=None):
    """The (S_q, S_k) bool mask of causal attention and a FlashAttention-2
    window (left, right; -1 unbounded; causal makes the right side 0)."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    i = torch.arange(sq, device=device)[:, None] + (sk - sq)
    j = torch.arange(sk, device=device)[None, :]
    keep = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if left >= 0:
        keep &= j >= i - left
    if right >= 0:
        keep &= j <= i + right
    return keep


def join_sinks(ref, ref_lse, sinks):
    """A reference without sinks made one with them: a logit per query head
    (dimension 1 of the LSE) joins every row's denominator; None: as is."""
    if sinks is None:
        return ref, ref_lse
    sink = sinks.to(device=ref_lse.device, dtype=torch.float64).view(1, -1, 1)
    total = torch.logaddexp(ref_lse, sink.expand_as(ref_lse))
    scale = torch.exp(ref_lse - total).nan_to_num(0.0).unsqueeze(-1)
    return ref * scale, total


def attention(q, k, v, scale=None, *, causal=False, window=(-1, -1),
              score_mod=None, mask_mod=None, sinks=None, device=None):
    """float64 O and LSE (see the module docstring); `device`: where to
    compute (default: q's). `sinks`: one logit per query head that joins
    every row's denominator (attention sinks)."""
    batch, hq, sq, d = q.shape
    hkv, sk, dv = k.shape[1], k.shape[2], v.shape[3]
    group = hq // hkv
    device = q.device if device is None else device
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    keep = visible(sq, sk, causal, window, device)
    out = torch.empty(batch, hq, sq, dv, dtype=torch.float64, device=device)
    lse = torch.empty(batch, hq, sq, dtype=torch.float64, device=device)
    bi = torch.arange(batch, device=device).view(batch, 1, 1, 1)
    qi = torch.arange(sq, device=device).view(1, 1, sq, 1)
    ki = torch.arange(sk, device=device).view(1, 1, 1, sk)
    per_chunk = max(1, CHUNK_ELEMENTS // max(1, batch * sq * sk))
    for h0 in range(0, hq, per_chunk):
        h1 = min(hq, h0 + per_chunk)
        heads = torch.arange(h0, h1, device=device)
        kv = (heads // group).to(k.device)
        qf = q[:, h0:h1].to(device=device, dtype=torch.float64)
        kf = k[:, kv].to(device=device, dtype=torch.float64)
        vf = v[:, kv].to(device=device, dtype=torch.float64)
        s = torch.matmul(qf, kf.transpose(-1, -2)).mul_(scale)
        hi = heads.view(1, -1, 1, 1)
        if score_mod is not None:
            s = score_mod(s, bi, hi, qi, ki).to(torch.float64)
        mask = keep
        if mask_mod is not None:
            mask = mask & mask_mod(bi, hi, qi, ki).to(device)
        s = s.masked_fill(~mask, -math.inf)
        row_lse = torch.logsumexp(s, dim=-1)
        if sinks is not None:
            sink = sinks[h0:h1].to(device=device, dtype=torch.float64)
            row_lse = torch.logaddexp(row_lse,
                                      sink.view(1, -1, 1).expand_as(row_lse))
        safe = torch.where(torch.isinf(row_lse), torch.zeros_like(row_lse),
                           row_lse)
        p = torch.exp(s - safe[..., None])
        out[:, h0:h1] = torch.matmul(p, vf)
        lse[:, h0:h1] = row_lse
        del s, p
    return out, lse


def attention_grads(q, k, v, do, scale, *, causal=False, window=(-1, -1),
                    score_mod=None, mask_mod=None, sinks=None):
    """The backward's float64 reference on (B, S, H, D) tensors (the
    kernels' layout): O (B, S, H, D_v) and the LSE (B, H, S_q) of
    attention(), and dQ, dK, dV by autograd through it (through the
    hooks too), on the CPU (a row that sees no key has no gradient);
    with `sinks`, the sink logits' gradient last."""
    qd, kd, vd = (x.detach().double().cpu().requires_grad_()
                  for x in (q, k, v))
    inputs = [qd, kd, vd]
    sd = None
    if sinks is not None:
        sd = sinks.detach().double().cpu().requires_grad_()
        inputs.append(sd)
    o, lse = attention(qd.transpose(1, 2), kd.transpose(1, 2),
                       vd.transpose(1, 2), scale, causal=causal,
                       window=window, score_mod=score_mod,
                       mask_mod=mask_mod, sinks=sd)
    grads = torch.autograd.grad(o, inputs, do.double().cpu().transpose(1, 2))
    return (o.detach().transpose(1, 2), lse.detach()) + tuple(grads)
