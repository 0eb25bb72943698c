// RUN: flashtile-opt %s -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-insert-barriers))'

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @not_allocated arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{has no offset; run attn-allocate-shared-memory first}}
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xf16, 3>
}
