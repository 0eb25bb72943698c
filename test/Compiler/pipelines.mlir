// The named pipelines: attn-to-tiles runs the tile pipeline on a kernel,
// attn-to-nvvm takes a kernel-level module to the LLVM + NVVM dialects.
// RUN: flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-to-tiles{tile-n=64}))' | FileCheck %s --check-prefix=TILES
// RUN: flashtile-opt %s --attn-to-nvvm | FileCheck %s --check-prefix=NVVM
// Pass options are user input, checked like the driver's flags.
// RUN: not flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-select-config{tile-m=-5}))' 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not flashtile-opt %s --pass-pipeline='builtin.module(attn.kernel(attn-to-tiles{q-in-regs=2}))' 2>&1 | FileCheck %s --check-prefix=QREG

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @k arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
}

// TILES: attn.kernel @k arch(#attn.arch<sm_120>) config(#attn.config<tile_m = {{[0-9]+}}, tile_n = 64,
// TILES-SAME: problem = #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 1.250000e-01 : f32>
// TILES-SAME: smem_bytes =
// TILES-NOT: attn.attention
// TILES: attn.kv_loop

// NVVM: llvm.func @k(
// NVVM-SAME: nvvm.kernel

// NEG: error: attn-select-config option tile-m = -5 is invalid: give a positive value, or 0 to search
// QREG: error: attn-select-config option q-in-regs = 2 is invalid: give 0 or 1, or -1 to search
