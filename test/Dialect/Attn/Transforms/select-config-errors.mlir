// RUN: flashtile-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-select-config{tile-m=128 tile-n=128 stages=2 q-in-regs=0}))'

// sm_100 parses, but its code path is not implemented.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{chip sm_100 needs the tcgen05/TMEM code path, which is not implemented; the sm80 code path (ldmatrix, mma.sync, cp.async) serves sm_80, sm_86, sm_89, sm_90, sm_120, sm_121}}
attn.kernel @sm100 arch(#attn.arch<sm_100>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// Pins that leave nothing feasible: every candidate is listed with its reason.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{no feasible config on sm_120 for the pinned parameters}}
// expected-note @below {{tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false: needs 163840 B of shared memory, over the 101376 B per-block limit of sm_120}}
// expected-note @below {{tile_m = 128, tile_n = 128, stages = 2, warps = 4, q_in_regs = false: needs 163840 B of shared memory}}
attn.kernel @nothing_fits arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// A kernel that declares its own tensors without attention's cannot be
// sized by the cost model yet.
// expected-error @below {{declares no tensor 'q': the tile pipeline (config selection, the allocator's checks, the lowering) sizes a kernel by attention's q, k, v, o and lse}}
attn.kernel @no_q arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"do", "in", "seqlen_q", "heads_q">]} {
^bb0(%do: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>):
}
