// RUN: flashtile-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))'

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has no config; run attn-select-config first or give config(#attn.config<...>)}}
attn.kernel @no_config arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has no attn.attention to expand (already at tile level?)}}
attn.kernel @nothing_to_expand arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{chip sm_100 needs the tcgen05/TMEM code path, which is not implemented}}
attn.kernel @sm100 arch(#attn.arch<sm_100>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
