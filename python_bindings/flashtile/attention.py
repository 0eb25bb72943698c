"""flashtile.attention: the torch call, in SDPA's and FlexAttention's layout.

    out = flashtile.attention(q, k, v, causal=True, score_mod=softcap)

q is (B, Hq, Sq, D), k and v (B, Hkv, Sk, D) and (B, Hkv, Sk, Dv), bf16 or
f16 CUDA tensors, with Hq a multiple of Hkv (GQA). The kernel is compiled
on first use through the cache (flashtile.compile) and launched through the
one runtime on torch's current stream. A block mask built once with
flashtile.create_block_mask is reused by every call given it.

A call whose query rows, counted over the query heads of one KV head
(Sq * Hq / Hkv), fit DECODE_ROWS runs the decode family: the query heads of
one KV head packed into a 16-row tile, warps splitting each KV tile, and the
KV sequence split over more blocks when the batch leaves SMs idle. The
choice is made per call, from the shapes, because the two families' speed
depends on them (a compile-time choice would be wrong for one of them).
flashtile.decode is the inference call in FlashAttention-2's layout.
"""

from . import FlashTileError
from . import _seqlens
from . import _sinks
from . import _varlen
from . import compiler as _compiler
from . import hooks as _hooks

__all__ = ["attention", "decode", "varlen", "create_block_mask", "BlockMask",
           "device_arch", "DECODE_ROWS"]

# The packed rows (Sq * Hq / Hkv) up to which flashtile.attention takes the
# decode family: two of its 16-row tiles. Above that, the prefill family's
# 128-row tiles read each K/V tile for more rows.
DECODE_ROWS = 32

_DTYPES = None  # "torch.bfloat16" -> "bf16", for the attention dtypes
_compiled = {}  # (shapes' facts, trace guard, ...) -> (kernel, key)
_traced = {}    # key: (traced IR, arch, isa, pins) -> (kernel, key)
_archs = {}


def device_arch(device):
    """The chip name of a CUDA device ("sm_90", "sm_120")."""
    index = device.index if device.index is not None else -1
    arch = _archs.get(index)
    if arch is None:
        import torch
        major, minor = torch.cuda.get_device_capability(device)
        arch = _archs[index] = f"sm_{major}{minor}"
    return arch


def _check(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not hasattr(t, "dim") or t.dim() != 4:
            raise FlashTileError(
                f"{name} must be a 4-d (batch, heads, seq, dim) tensor, got "
                f"{getattr(t, 'shape', type(t).__name__)}")
    global _DTYPES
    if _DTYPES is None:
        from .runtime import torch_dtype_name
        _DTYPES = {f"torch.{torch_dtype_name(n)}": n
                   for n in _hooks.attention_dtypes()}
    dtype = _DTYPES.get(str(q.dtype))
    if dtype is None:
        raise FlashTileError(
            f"q has dtype {q.dtype}; flashtile.attention takes "
            f"{' or '.join(t[len('torch.'):] for t in _DTYPES)}")
    if not q.is_cuda:
        raise FlashTileError("q must be a CUDA tensor")
    return dtype


def _kernel(q, k, v, causal, window, score_mod, mask_mod, arch, isa,
            sink=None, family="prefill", paged=False, bindings=None):
    """The compiled kernel for this call's dtype, head dims, hooks and
    family, and its key (the traced IR and what else enters the cache key).

    Calls are memoized in memory by the hooks' trace guard
    (hooks.trace_guard: their code and every value their trace reads), so
    a hook whose captured constant changed is traced again and gets its
    own kernel, as FlexAttention recompiles. A hook the guard cannot vouch
    for is traced on every call and its kernel found by the IR."""
    window = _hooks.check_window(window)
    guard = _hooks.trace_guard((score_mod, mask_mod, sink), bindings)
    fast = None
    if guard is not None:
        try:
            fast = (q.dtype, q.get_device(), q.shape[-1], v.shape[-1],
                    bool(causal), window, guard, arch, isa, family, paged)
            hit = _compiled.get(fast)
        except (AttributeError, IndexError, TypeError):
            fast, hit = None, None
        if hit is not None:
            return hit
    dtype = _check(q, k, v)
    device = device_arch(q.device)
    target = arch or device
    target_isa = isa
    if target_isa is None and target != device:
        target_isa = device  # an SM120 configuration run on an sm_90 GPU
    request = _compiler.KernelRequest(
        q.shape[-1], dtype, head_dim_v=v.shape[-1], causal=causal,
        window=window, score_mod=score_mod, mask_mod=mask_mod, arch=target,
        isa=target_isa, sink=sink, family=family, paged=paged,
        captures=bindings)
    key = (request.ir, request.arch, request.isa,
           tuple(sorted(request.pins.items())))
    hit = _traced.get(key)
    if hit is None:
        compiled = _compiler.compile_request(request)
        compiled.runtime_kernel()  # loaded once, here
        hit = _traced[key] = (compiled, key)
    if fast is not None:
        _compiled[fast] = hit
    return hit


def _family(rows, heads_q, heads_kv, mask_mod):
    """The family of a call with `rows` queries per head: decode when its
    packed rows fit DECODE_ROWS. A mask_mod keeps the prefill family, whose
    tiles skip what the mask drops (the decode family's mix heads and
    positions, so it evaluates the mask on every key)."""
    if mask_mod is not None or heads_kv <= 0 or heads_q % heads_kv:
        return "prefill"
    return "decode" if rows * (heads_q // heads_kv) <= DECODE_ROWS else "prefill"


def _prepare(q, k, v, causal, window, scale, score_mod, mask_mod, sinks,
             arch, isa, family=None, layout="bhsd", paged=False,
             bindings=None):
    """The compiled kernel of a call, its memo key, and the runtime call's
    arguments: the (B, S, H, D) views and the extras as the hooks capture
    them now. `sinks` is read through the one sink hook (_sinks.py).
    `bindings` maps what the package's own hooks capture (_seqlens.py,
    _varlen.py, _sinks.py) to this call's tensors: bound per call, so
    that concurrent calls never see each other's. `layout` is the
    tensors' ("bhsd": SDPA's, "bshd": FlashAttention's)."""
    sink = None
    bindings = dict(bindings or {})
    if sinks is not None:
        bindings[_sinks.SINKS] = sinks
        sink = _sinks.sink
    if layout == "bhsd":
        args = (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    else:
        args = (q, k, v)
    if family is None:
        family = _family(args[0].shape[1], args[0].shape[2],
                         args[1].shape[2], mask_mod)
    # The kernel is keyed by what _kernel reads: the last dims and dtypes,
    # the same in both layouts.
    compiled, key = _kernel(q, k, v, causal, window, score_mod, mask_mod,
                            arch, isa, sink, family, paged, bindings or None)
    kwargs = (_hooks.read_captures((score_mod, mask_mod, sink),
                                   compiled.extras, bindings)
              if compiled.extras else {})
    if scale is not None:
        kwargs["softmax_scale"] = float(scale)
    return compiled, key, args, kwargs


def _run(compiled, args, kwargs, scale, launch, deterministic=None,
         unsupported=None):
    """Runs `launch` (the forward's launch, returning (out, lse)) where no
    gradient is wanted; otherwise through the autograd Function of
    _autograd.py, with the backward family of `compiled` (and the
    gradients of the captured tensors that require grad: the sinks, a
    learned bias), or with `unsupported` as the reason there is none
    (raised at backward)."""
    q, k, v = args
    if not any(getattr(t, "requires_grad", False)
               for t in (q, k, v, *kwargs.values())):
        return launch()
    from . import _autograd
    if not _autograd.torch.is_grad_enabled():
        return launch()
    tensor_grads = _autograd.tensors_wanting_grad(kwargs)
    if unsupported is not None:
        backward = (None, unsupported)
    else:
        backward = _autograd.backward_kernel(
            compiled, _autograd.deterministic_default(deterministic),
            tensor_grads)
    extras = {name: value for name, value in kwargs.items()
              if name != "softmax_scale"}
    return _autograd.Attention.apply(
        q, k, v, launch, backward, -1.0 if scale is None else float(scale),
        extras, tensor_grads, *(kwargs[name] for name in tensor_grads))


class BlockMask:
    """A run-time block mask (and any other reusable workspace) built once
    for given sizes and captured tensors: pass it to flashtile.attention as
    `block_mask` in every call with the same sizes and mask inputs."""

    __slots__ = ("prepared", "key", "sizes")

    def __init__(self, prepared, key, sizes):
        self.prepared = prepared
        self.key = key
        self.sizes = sizes


def create_block_mask(q, k, v, *, mask_mod, causal=False, window=None,
                      score_mod=None, scale=None, sinks=None, arch=None,
                      isa=None):
    """Runs the kernels that build the block mask of this attention (the
    same arguments as flashtile.attention) and returns it."""
    compiled, key, args, kwargs = _prepare(q, k, v, causal, window, scale,
                                           score_mod, mask_mod, sinks, arch,
                                           isa, family="prefill")
    prepared = compiled.runtime_kernel().prepare(*args, **kwargs)
    return BlockMask(prepared, key, (tuple(q.shape), tuple(k.shape)))


def attention(q, k, v, *, causal=False, window=None, scale=None,
              score_mod=None, mask_mod=None, block_mask=None, sinks=None,
              return_lse=False, arch=None, isa=None, deterministic=None):
    """Attention of q over k, v with FlashTile's kernel for these hooks.
    Returns the output (B, Hq, Sq, Dv) (a transposed view of the kernel's
    (B, Sq, Hq, Dv) output), and the log-sum-exp (B, Hq, Sq) with
    return_lse. `arch=None` targets the GPU's chip; another arch runs its
    configuration with the GPU's ISA (`arch="sm_120"` on an H200).
    `sinks`, a float32 (Hq,) tensor, adds a learned logit per query head to
    every row's softmax denominator (attention sinks, as gpt-oss and vLLM's
    `s_aux` have them); a row with no key then has LSE = its sink.

    Differentiable: where q, k, v or a captured tensor requires grad (and
    grad mode is on), the output's backward runs the compiler-built
    backward family (dQ, dK, dV from O and the LSE; GQA reduced in the
    kernel), compiled on first use. Its score_mod gradient is derived by
    the compiler (hooks may read tensors and scalars), and so is the
    gradient of every captured tensor a hook reads that requires grad (a
    learned bias table, ALiBi slopes: added with f32 atomics in the main
    kernel; the sinks: -sum_i exp(sink - LSE_i) D_i, by the preprocess
    kernel); the backward skips the tiles a mask_mod drops whole (by its
    key interval, or by a run-time block mask where it has no exact one)
    and evaluates it only in the tiles it does not keep whole.
    `deterministic=True`
    computes dQ without atomics, the same bits every run (None: torch's
    torch.are_deterministic_algorithms_enabled()). The LSE is not
    differentiable."""
    compiled, key, args, kwargs = _prepare(q, k, v, causal, window, scale,
                                           score_mod, mask_mod, sinks, arch,
                                           isa)
    if block_mask is not None:
        if block_mask.key != key or block_mask.sizes != (tuple(q.shape),
                                                         tuple(k.shape)):
            raise FlashTileError(
                "block_mask was built for another attention (other hooks, "
                "dtype, head dims or sizes): build it with "
                "flashtile.create_block_mask with this call's arguments")
        kernel = block_mask.prepared
    else:
        kernel = compiled.runtime_kernel()
    out, lse = _run(compiled, args, kwargs, scale,
                    lambda: kernel(*args, **kwargs), deterministic)
    out = out.transpose(1, 2)
    return (out, lse) if return_lse else out


def _append(k_cache, v_cache, k_new, v_new, cache_seqlens, block_table=None):
    """Writes k_new / v_new into the caches at cache_seqlens and returns the
    lengths after the append (flashtile.decode). With a block table the
    caches are page pools, and position p of sequence b is row
    p % page_size of page block_table[b, p // page_size]."""
    import torch
    if k_new is None or v_new is None:
        raise FlashTileError("k_new and v_new go together: give both")
    if cache_seqlens is None:
        raise FlashTileError(
            "k_new needs cache_seqlens: the rows go at each sequence's length")
    batch, rows = k_new.shape[0], k_new.shape[1]
    if block_table is not None and (not hasattr(block_table, "dim") or
                                    block_table.dim() != 2):
        raise FlashTileError(
            f"block_table must be a (batch, max_pages) tensor, got "
            f"{tuple(getattr(block_table, 'shape', ()))}")
    cache_batch = (block_table.shape[0] if block_table is not None
                   else k_cache.shape[0])
    if (tuple(k_new.shape) != (batch, rows) + tuple(k_cache.shape[2:]) or
            tuple(v_new.shape) != (batch, rows) + tuple(v_cache.shape[2:]) or
            batch != cache_batch or tuple(cache_seqlens.shape) != (batch,)):
        raise FlashTileError(
            f"k_new {tuple(k_new.shape)} and v_new {tuple(v_new.shape)} must "
            f"be (B, Sn) + the caches' (Hkv, D) {tuple(k_cache.shape[2:])} / "
            f"{tuple(v_cache.shape[2:])}, with B = {cache_batch} and "
            f"cache_seqlens of shape (B,), got {tuple(cache_seqlens.shape)}")
    page = k_cache.shape[1]
    capacity = page * (block_table.shape[1] if block_table is not None
                       else 1)
    if not torch.cuda.is_current_stream_capturing():
        longest = int((cache_seqlens.long() + rows).max()) if batch else 0
        if longest > capacity:
            raise FlashTileError(
                f"k_new does not fit: cache_seqlens + {rows} reaches "
                f"{longest} keys, the caches hold {capacity}")
    positions = (cache_seqlens.long().unsqueeze(1) +
                 torch.arange(rows, device=k_cache.device).unsqueeze(0))
    sequences = torch.arange(batch, device=k_cache.device).unsqueeze(1)
    if block_table is not None:
        pages = block_table.long()[sequences, positions // page]
        if not torch.cuda.is_current_stream_capturing() and pages.numel():
            low, high = int(pages.min()), int(pages.max())
            if low < 0 or high >= k_cache.shape[0]:
                raise FlashTileError(
                    f"block_table lists page {low if low < 0 else high} for "
                    f"an appended row; the pool has pages 0 to "
                    f"{k_cache.shape[0] - 1}")
        k_cache[pages, positions % page] = k_new
        v_cache[pages, positions % page] = v_new
    else:
        k_cache[sequences, positions] = k_new
        v_cache[sequences, positions] = v_new
    return (cache_seqlens + rows).to(torch.int32)


def decode(q, k_cache, v_cache, *, cache_seqlens=None, k_new=None,
           v_new=None, block_table=None, softmax_scale=None, causal=False,
           window_size=(-1, -1), score_mod=None, sinks=None, num_splits=0,
           return_softmax_lse=False, out=None, arch=None, isa=None,
           seqused_k=None):
    """Attention of new queries over a KV cache, in FlashAttention-2's
    layout and argument names (flash_attn_with_kvcache): q (B, Sq, Hq, D),
    k_cache and v_cache (B, Sk, Hkv, D) / (B, Sk, Hkv, Dv); returns out
    (B, Sq, Hq, Dv) and, with return_softmax_lse, the LSE (B, Hq, Sq).
    Always the decode family (packed GQA rows, KV warps, split-KV):

    * cache_seqlens, an int32 (B,) tensor (vLLM's name, seqused_k, is
      accepted for it): the valid
      keys of each sequence's cache (the rest of Sk is ignored and never
      read, tile by tile); 0 gives O = 0 and LSE = -inf (or the sink);
    * k_new, v_new (B, Sn, Hkv, D): rows appended to the caches at
      cache_seqlens[b] before the attention, which then sees
      cache_seqlens[b] + Sn keys (flash_attn_with_kvcache's k and v). The
      append is two torch scatters (index_put) on the current stream, not
      fused into the attention kernel; the caches must have room
      (cache_seqlens + Sn <= Sk, checked unless a CUDA graph is being
      captured);
    * causal is bottom-right aligned (query i sees keys up to L - Sq + i,
      L = cache_seqlens[b] or Sk), as for speculative decoding;
      window_size (left, right) likewise (without cache_seqlens);
    * num_splits = 0 picks the KV split count from the GPU's SM count (FA2's
      rule); num_splits > 0 fixes it, so that the launch (grid, workspaces)
      depends only on the shapes: what a CUDA graph captured once for
      varying lengths needs;
    * sinks, a float32 (Hq,) tensor: a learned logit per query head joins
      every row's softmax denominator (gpt-oss), once, in the combine;
    * score_mod: a hook, as in flashtile.attention (q_idx and h are the
      query's position and head, though heads share a tile);
    * block_table, an int32 (B, max_pages) tensor: paged KV, as vLLM and
      FA2 have it. k_cache and v_cache are then page pools (num_pages,
      page_size, Hkv, D), any page size, and key j of sequence b is row
      j % page_size of page block_table[b, j // page_size]; a sequence
      holds max_pages * page_size keys, or cache_seqlens[b]. Entries past
      a sequence's keys are never used (an out-of-range one is clamped
      into the pool, so it cannot fault)."""
    if seqused_k is not None:
        if cache_seqlens is not None:
            raise FlashTileError(
                "cache_seqlens and seqused_k are one argument (FA2's and "
                "vLLM's names): give one")
        cache_seqlens = seqused_k
    window = None if tuple(window_size) == (-1, -1) else tuple(window_size)
    mask_mod = None
    paged = block_table is not None
    if k_new is not None or v_new is not None:
        cache_seqlens = _append(k_cache, v_cache, k_new, v_new, cache_seqlens,
                                block_table)
    if cache_seqlens is not None:
        if (not hasattr(cache_seqlens, "dim") or
                tuple(cache_seqlens.shape) != (q.shape[0],)):
            raise FlashTileError(
                f"cache_seqlens must be a ({q.shape[0]},) tensor, one length "
                f"per sequence of q, got "
                f"{tuple(getattr(cache_seqlens, 'shape', ()))}")
        if window is not None:
            raise FlashTileError(
                "window_size with cache_seqlens is not supported yet")
        # The lengths (and the causal alignment to them) are a mask_mod of
        # the sequence: a key interval, so whole tiles past them are skipped.
        bindings = {_seqlens.CACHE_SEQLENS: cache_seqlens}
        mask_mod = _seqlens.causal_mask if causal else _seqlens.mask
        causal = False
    else:
        bindings = None
    compiled, _, args, kwargs = _prepare(
        q, k_cache, v_cache, causal, window, softmax_scale, score_mod,
        mask_mod, sinks, arch, isa, family="decode", layout="bshd",
        paged=paged, bindings=bindings)
    if paged:
        kwargs[_hooks.PAGE_TABLE] = block_table
    if out is not None:
        kwargs["o"] = out
    if not isinstance(num_splits, int) or num_splits < 0:
        raise FlashTileError(
            f"num_splits must be an int >= 0 (0: chosen from the GPU), got "
            f"{num_splits!r}")
    kernel = compiled.runtime_kernel()
    if num_splits:
        def launch():
            return kernel.launch(*args, sizes={"kv_splits": num_splits},
                                 **kwargs)
    else:
        def launch():
            return kernel(*args, **kwargs)
    result, lse = _run(compiled, args, kwargs, softmax_scale, launch,
                       unsupported="flashtile.decode is an inference call")
    return (result, lse) if return_softmax_lse else result


def varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
           max_seqlen_k=None, *, softmax_scale=None, causal=False,
           score_mod=None, sinks=None, return_softmax_lse=False, arch=None,
           isa=None, deterministic=None):
    """Packed sequences of different lengths in one launch, in
    FlashAttention-2's varlen layout and names (flash_attn_varlen_func):
    q (total_q, Hq, D), k and v (total_k, Hkv, D) / (total_k, Hkv, Dv),
    cu_seqlens_q / cu_seqlens_k int32 (B + 1,) offsets with
    cu_seqlens[-1] = total. Returns out (total_q, Hq, Dv) and, with
    return_softmax_lse, the unpadded LSE (Hq, total_q). Sequences may have
    Sq != Sk (a decode step next to a prefill chunk); causal is aligned
    bottom-right within each sequence. max_seqlen_q / max_seqlen_k are
    accepted for FA2's signature and not needed.

    It runs the prefill family with a mask_mod of each token's sequence
    (flashtile/_varlen.py): a key interval per query row, evaluated at every
    row of a query tile, so each tile visits only the key tiles of its own
    sequences. A score_mod sees packed positions as q_idx and kv_idx.

    Differentiable as flashtile.attention is: the backward visits only the
    tiles of each sequence (its preprocess kernel writes each query tile's
    KV tiles, which the main kernel reads per KV tile) and evaluates the
    mask at every entry of them."""
    import torch
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not hasattr(t, "dim") or t.dim() != 3:
            raise FlashTileError(
                f"{name} must be a 3-d (total, heads, dim) tensor, got "
                f"{getattr(t, 'shape', type(t).__name__)}")
    for name, t, total in (("cu_seqlens_q", cu_seqlens_q, q.shape[0]),
                           ("cu_seqlens_k", cu_seqlens_k, k.shape[0])):
        if (not hasattr(t, "dim") or t.dim() != 1 or t.shape[0] < 2 or
                t.dtype != torch.int32):
            raise FlashTileError(
                f"{name} must be an int32 (batch + 1,) tensor, got "
                f"{getattr(t, 'dtype', None)} {tuple(getattr(t, 'shape', ()))}")
    if cu_seqlens_q.shape[0] != cu_seqlens_k.shape[0]:
        raise FlashTileError(
            f"cu_seqlens_q has {cu_seqlens_q.shape[0]} entries, cu_seqlens_k "
            f"{cu_seqlens_k.shape[0]}: one batch")
    batch = cu_seqlens_q.shape[0] - 1
    ids = torch.arange(batch, device=q.device, dtype=torch.int32)
    # output_size: no host sync (the totals are the tensors' lengths).
    bindings = _varlen.bindings(
        seq_q=torch.repeat_interleave(
            ids, (cu_seqlens_q[1:] - cu_seqlens_q[:-1]).long(),
            output_size=q.shape[0]),
        start_k=cu_seqlens_k[:-1], end_k=cu_seqlens_k[1:],
        shift=(cu_seqlens_k[1:] - cu_seqlens_q[1:]).to(torch.int32))
    mask_mod = _varlen.causal_mask if causal else _varlen.mask
    compiled, _, args, kwargs = _prepare(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), False, None,
        softmax_scale, score_mod, mask_mod, sinks, arch, isa,
        family="prefill", layout="bshd", bindings=bindings)
    kernel = compiled.runtime_kernel()
    out, lse = _run(compiled, args, kwargs, softmax_scale,
                    lambda: kernel(*args, **kwargs), deterministic)
    return (out[0], lse[0]) if return_softmax_lse else out[0]
