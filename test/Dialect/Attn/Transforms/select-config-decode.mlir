// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-select-config{family=decode}))' | FileCheck %s
// RUN: not flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-select-config{family=bogus}))' 2>&1 | FileCheck %s --check-prefix=BAD

// The decode family: a 16-row tile of packed rows, 4 KV warps, and the most
// K/V bytes in flight that fit 99 KiB (ConfigSelection.h). At d = 128 three
// 64-key stages fill 96 KiB; at d = 64 they need half of that.
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @d128 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 3, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>)
// BAD: error: attn-select-config option family = 'bogus' is invalid: give prefill or decode
attn.kernel @d128 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// d = 256: 4 KV warps' merge buffer alone would take 66 KiB over the K/V
// bytes; 2 warps of 16 keys each fit, with Q in shared memory (in registers
// it would spill).
!t = memref<?x?x?x256xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @d256 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 32, stages = 2, warps = 2, q_in_regs = false, kv_warps = 2, pack_gqa = true>)
attn.kernel @d256 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}
