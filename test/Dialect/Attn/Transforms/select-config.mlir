// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-select-config))' | FileCheck %s
// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-select-config{tile-n=64 q-in-regs=0}))' | FileCheck %s --check-prefix=PINNED

// d = 128 on sm_120: the search keeps 8 warps per SM resident with one
// 8-warp block whose V reuses Q's bytes (64 KiB).
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @d128_sm120 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true>)
// PINNED-LABEL: attn.kernel @d128_sm120 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = {{[0-9]+}}, tile_n = 64, stages = {{[0-9]}}, warps = {{[0-9]+}}, q_in_regs = false>)
attn.kernel @d128_sm120 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// A config the user gave is kept as it is.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @given arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = false>)
// PINNED-LABEL: attn.kernel @given arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = false>)
attn.kernel @given arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
