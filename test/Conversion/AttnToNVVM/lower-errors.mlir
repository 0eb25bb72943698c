// RUN: flashtile-opt %s -split-input-file -verify-diagnostics --convert-attn-to-nvvm

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{must be an allocated tile program: run attn-select-config, attn-expand-to-tiles, attn-allocate-shared-memory and attn-insert-barriers first}}
attn.kernel @kernel_level arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{chip sm_100 needs the tcgen05/TMEM code path, which is not implemented}}
attn.kernel @sm100 arch(#attn.arch<sm_100>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 0 : i64} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}
