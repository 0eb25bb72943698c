// RUN: flashtile-opt %s -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-allocate-shared-memory))'

// A user's tile program that cannot fit the chip: the allocator's error,
// with every buffer named as the program named it, at its own line.
!t = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-note @below {{hint}}
// expected-error @below {{shared memory plan needs 131072 B but sm_120 allows 101376 B per block}}
attn.kernel @too_big arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-note @below {{queries: 32768 B (128x128xbf16) at offset}}
  %qs = attn.smem_alloc {name = "queries"} : memref<1x128x128xbf16, 3>
  // expected-note @below {{key_ring: 65536 B (128x128xbf16 x 2 slots) at offset}}
  %ks = attn.smem_alloc {name = "key_ring"} : memref<2x128x128xbf16, 3>
  // expected-note @below {{value_tile: 32768 B (128x128xbf16) at offset}}
  %vs = attn.smem_alloc {name = "value_tile"} : memref<1x128x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x128x128xbf16, 3>
  attn.copy_async %k[%b, %m, %hkv] -> %ks : !t -> memref<2x128x128xbf16, 3>
  attn.copy_async %v[%b, %m, %hkv] -> %vs : !t -> memref<1x128x128xbf16, 3>
  %s = attn.mma %qs, %ks[%m] {transpose_b} : memref<1x128x128xbf16, 3>, memref<2x128x128xbf16, 3> -> !attn.frag<128x128xf32>
  %vf = attn.load_frag %vs : memref<1x128x128xbf16, 3> -> !attn.frag<128x128xbf16>
}
