// RUN: flashtile-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-select-config{tile-m=128 tile-n=128 warps=8 explain=true}))'
// `explain` reports every candidate, best first, with its numbers or why it
// was rejected. The scores and register estimates are the cost model's and
// are matched by pattern (the order is what this test is about; the
// ranking itself is ConfigSelectionTest's).

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-remark-re @below {{tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true: score {{0\.[0-9]+}}, 65536 B smem, ~{{[0-9]+}} regs, 1 block(s) = 8 warps per SM}}
// expected-remark-re @below {{tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = false: score {{0\.[0-9]+}}, 98304 B smem, ~{{[0-9]+}} regs, 1 block(s) = 8 warps per SM}}
// expected-remark @below {{tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = true: rejected, needs 131072 B of shared memory, over the 101376 B per-block limit of sm_120}}
// expected-remark @below {{tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false: rejected, needs 163840 B of shared memory, over the 101376 B per-block limit of sm_120}}
attn.kernel @explained arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
