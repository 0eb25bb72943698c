"""Sigmoid, differential and ReLU attention written in the tile language
from Python: the twins of dsl/examples/sigmoid.cpp, differential.cpp and
relu.cpp, traced by flashtile.tile; and sigmoid attention with hooks inside
the tile program (a distance bias and a band mask).

    python3 tile_attention.py OUT_DIR [--isa sm_90]

compiles each, f16 and bf16, causal and not, and writes
pytile_<example>_<dtype>_c<0|1>.{plan.json,cubin} into OUT_DIR (the GPU
proof runs them next to the C++-built kernels; tools/gpu/check_tiles.py).
"""

import json
import math
import os
import shutil
import sys

import flashtile
from flashtile import tile

# Run-time kernel arguments, passed by name at each call.
bias = flashtile.scalar(0.0, name="bias")
lam = flashtile.scalar(0.8, name="lam")
slope = flashtile.scalar(0.01, name="slope")
# The band of sigmoid_hooked_attention: keys within BAND positions.
BAND = 256


def sigmoid_attention(causal):
    """O = sigmoid(scale * Q K^T + bias) V (FlashSigmoid): no softmax."""
    right = 0 if causal else -1

    def program(t):
        qs = t.buffer("Q", 1, t.tile_m, t.head_dim)
        ks = t.buffer("K", 1, t.tile_n, t.head_dim)
        vs = t.buffer("V", 1, t.tile_n, t.head_dim_v)
        os_ = t.buffer("O", 1, t.tile_m, t.head_dim_v)
        blk = t.block_context()
        r = t.kv_bounds(blk, window=(-1, right))
        t.copy(t.q, blk, blk.m_block, qs)
        qf = t.load(qs)
        scale = t.softmax_scale()

        def step(j, acc, masked):
            t.copy(t.k, blk, j, ks)
            s = t.dot(qf, ks, j)
            if masked:
                s = t.mask(s, blk, j, window=(-1, right))
            # sigmoid(y) = 0.5 + 0.5 tanh(y / 2), the halving folded into
            # the scale and the bias: one FMA, one tanh, one FMA per score.
            p = t.map([s, scale], lambda x, c, row, col:
                      0.5 + 0.5 * flashtile.tanh(x * (0.5 * c) + 0.5 * bias))
            t.copy(t.v, blk, j, vs)
            return [t.dot_accumulate(t.convert(p), vs, j, acc)]

        acc = t.splat([t.tile_m, t.head_dim_v], 0.0)
        acc, = t.loop(r.unmasked_end, r.end, [acc],
                      lambda j, a: step(j, a, True), masked=True)
        acc, = t.loop(r.unmasked_begin, r.unmasked_end, [acc],
                      lambda j, a: step(j, a, False))
        t.store(acc, os_, blk)
    return program


def differential_attention(causal):
    """O = (softmax(Q1 K1^T / sqrt(d)) - lam softmax(Q2 K2^T / sqrt(d))) V
    (DIFF Transformer), Q = [Q1; Q2] and K = [K1; K2] halves of the head
    dim; two online softmaxes written with row reductions and maps."""
    right = 0 if causal else -1
    neg_inf, log2e = -math.inf, 1.0 / math.log(2.0)

    def program(t):
        d, dv, half = t.head_dim, t.head_dim_v, t.head_dim // 2
        qs = t.buffer("Q", 1, t.tile_m, d)
        ks = t.buffer("K", 1, t.tile_n, d)
        vs = t.buffer("V", 1, t.tile_n, dv)
        os_ = t.buffer("O", 1, t.tile_m, dv)
        blk = t.block_context()
        r = t.kv_bounds(blk, window=(-1, right))
        t.copy(t.q, blk, blk.m_block, qs)
        scale = t.softmax_scale(1.0 / math.sqrt(half))

        def softmax_step(s, m, l, acc, j):
            m_new = t.map([m, t.reduce_rows(s, "max")],
                          lambda a, b, row: flashtile.maximum(a, b))
            p = t.map([s, m_new, scale], lambda x, mx, c, row, col:
                      flashtile.where(mx == neg_inf, 0.0,
                                      flashtile.exp2((x - mx) * c * log2e)))
            alpha = t.map([m, m_new, scale], lambda a, mx, c, row:
                          flashtile.where(mx == neg_inf, 1.0,
                                          flashtile.exp2((a - mx) * c * log2e)))
            l_new = t.map([l, alpha, t.reduce_rows(p, "sum")],
                          lambda a, b, c, row: a * b + c)
            acc = t.map([acc, alpha], lambda a, b, row, col: a * b)
            return m_new, l_new, t.dot_accumulate(t.convert(p), vs, j, acc)

        def step(j, m1, l1, a1, m2, l2, a2, masked):
            t.copy(t.k, blk, j, ks)
            s1 = t.dot(qs, ks, j, head_range=(0, half))
            s2 = t.dot(qs, ks, j, head_range=(half, d))
            if masked:
                s1 = t.mask(s1, blk, j, window=(-1, right))
                s2 = t.mask(s2, blk, j, window=(-1, right))
            t.copy(t.v, blk, j, vs)
            return [*softmax_step(s1, m1, l1, a1, j),
                    *softmax_step(s2, m2, l2, a2, j)]

        def init():
            return [t.splat([t.tile_m], neg_inf), t.splat([t.tile_m], 0.0),
                    t.splat([t.tile_m, dv], 0.0)]
        state = init() + init()
        state = t.loop(r.unmasked_end, r.end, state,
                       lambda j, *c: step(j, *c, True), masked=True)
        state = t.loop(r.unmasked_begin, r.unmasked_end, state,
                       lambda j, *c: step(j, *c, False))
        o = t.map([state[2], state[1], state[5], state[4]],
                  lambda a1, l1, a2, l2, row, col:
                  flashtile.where(l1 == 0.0, 0.0, a1 / l1)
                  - lam * flashtile.where(l2 == 0.0, 0.0, a2 / l2))
        t.store(o, os_, blk)
    return program


def relu_attention(causal):
    """O_i = (1 / n_i) sum_j relu(scale q_i.k_j) v_j (Wortsman et al.,
    2023), n_i the keys row i sees: counted per row as the loop goes."""
    right = 0 if causal else -1
    neg_inf = -math.inf

    def program(t):
        qs = t.buffer("Q", 1, t.tile_m, t.head_dim)
        ks = t.buffer("K", 1, t.tile_n, t.head_dim)
        vs = t.buffer("V", 1, t.tile_n, t.head_dim_v)
        os_ = t.buffer("O", 1, t.tile_m, t.head_dim_v)
        blk = t.block_context()
        r = t.kv_bounds(blk, window=(-1, right))
        t.copy(t.q, blk, blk.m_block, qs)
        qf = t.load(qs)
        scale = t.softmax_scale()
        tile_n = float(t.tile_n)

        def step(j, acc, count, masked):
            t.copy(t.k, blk, j, ks)
            s = t.dot(qf, ks, j)
            if masked:
                s = t.mask(s, blk, j, window=(-1, right))
                seen = t.reduce_rows(t.map([s], lambda x, row, col:
                                           flashtile.where(x == neg_inf, 0.0, 1.0)),
                                     "sum")
                count = t.map([count, seen], lambda a, b, row: a + b)
            else:
                count = t.map([count], lambda a, row: a + tile_n)
            p = t.map([s, scale], lambda x, c, row, col:
                      flashtile.maximum(x * c, 0.0))
            t.copy(t.v, blk, j, vs)
            return [t.dot_accumulate(t.convert(p), vs, j, acc), count]

        state = [t.splat([t.tile_m, t.head_dim_v], 0.0), t.splat([t.tile_m], 0.0)]
        state = t.loop(r.unmasked_end, r.end, state,
                       lambda j, a, n: step(j, a, n, True), masked=True)
        state = t.loop(r.unmasked_begin, r.unmasked_end, state,
                       lambda j, a, n: step(j, a, n, False))
        o = t.map(state, lambda a, n, row, col:
                  flashtile.where(n == 0.0, 0.0, a / n))
        t.store(o, os_, blk)
    return program


def sigmoid_hooked_attention(causal):
    """Sigmoid attention whose scores go through hooks inside the tile
    program, as flashtile.compile takes them: a score_mod adds
    -slope * |q_idx - kv_idx| to the scaled score, and a mask_mod keeps the
    keys within BAND positions of the query."""
    right = 0 if causal else -1

    def distance_bias(score, b, h, q_idx, kv_idx):
        return score - slope * flashtile.to_float(
            flashtile.where(q_idx > kv_idx, q_idx - kv_idx, kv_idx - q_idx))

    def band(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx < BAND) & (kv_idx - q_idx < BAND)

    def program(t):
        qs = t.buffer("Q", 1, t.tile_m, t.head_dim)
        ks = t.buffer("K", 1, t.tile_n, t.head_dim)
        vs = t.buffer("V", 1, t.tile_n, t.head_dim_v)
        os_ = t.buffer("O", 1, t.tile_m, t.head_dim_v)
        blk = t.block_context()
        r = t.kv_bounds(blk, window=(-1, right))
        t.copy(t.q, blk, blk.m_block, qs)
        qf = t.load(qs)
        scale = t.softmax_scale()

        def step(j, acc, masked):
            t.copy(t.k, blk, j, ks)
            s = t.dot(qf, ks, j)
            # Scaled and biased; -inf outside the band.
            s = t.modify_scores(s, blk, j, scale, score_mod=distance_bias,
                                mask_mod=band)
            if masked:
                s = t.mask(s, blk, j, window=(-1, right))
            p = t.map([s], lambda x, row, col:
                      0.5 + 0.5 * flashtile.tanh(0.5 * x + 0.5 * bias))
            t.copy(t.v, blk, j, vs)
            return [t.dot_accumulate(t.convert(p), vs, j, acc)]

        acc = t.splat([t.tile_m, t.head_dim_v], 0.0)
        acc, = t.loop(r.unmasked_end, r.end, [acc],
                      lambda j, a: step(j, a, True), masked=True)
        acc, = t.loop(r.unmasked_begin, r.unmasked_end, [acc],
                      lambda j, a: step(j, a, False))
        t.store(acc, os_, blk)
    return program


# name -> (program factory, the config it is written for)
EXAMPLES = {
    "sigmoid": (sigmoid_attention, dict(tile_m=128, tile_n=128, warps=8,
                                        q_in_regs=True)),
    "differential": (differential_attention, dict(tile_m=128, tile_n=32,
                                                  warps=8, q_in_regs=False)),
    "relu": (relu_attention, dict(tile_m=128, tile_n=128, warps=8,
                                  q_in_regs=True)),
    "sigmoid_hooked": (sigmoid_hooked_attention,
                       dict(tile_m=128, tile_n=128, warps=8, q_in_regs=True)),
}


def compile_example(example, dtype, causal, isa=None, cache=None):
    factory, config = EXAMPLES[example]
    return tile.compile(factory(causal), 128, dtype, isa=isa, cache=cache,
                        name=f"pytile_{example}_{dtype}_c{int(causal)}",
                        **config)


def main(argv):
    out = argv[1]
    isa = argv[3] if len(argv) > 3 and argv[2] == "--isa" else None
    os.makedirs(out, exist_ok=True)
    for example in EXAMPLES:
        for dtype in ("bf16", "f16"):
            for causal in (False, True):
                k = compile_example(example, dtype, causal, isa=isa)
                name = f"pytile_{example}_{dtype}_c{int(causal)}"
                shutil.copy(os.path.join(k.path, "kernel.cubin"),
                            os.path.join(out, "kernel.cubin.tmp"))
                os.replace(os.path.join(out, "kernel.cubin.tmp"),
                           os.path.join(out, name + ".cubin"))
                plan = k.metadata
                for entry in plan.get("kernels", []):
                    if entry.get("cubin") == "kernel.cubin":
                        entry["cubin"] = name + ".cubin"
                with open(os.path.join(out, name + ".plan.json"), "w") as f:
                    json.dump(plan, f, indent=1)
                print(f"{name}: {k.key[:12]}")


if __name__ == "__main__":
    main(sys.argv)
