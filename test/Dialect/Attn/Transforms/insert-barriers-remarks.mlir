// RUN: flashtile-opt %s -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-insert-barriers{remarks=true}))'

// Each wait and barrier is proven needed by the race it prevents; one that
// no trace needs is removed.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @remarks arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-remark @below {{removed: no trace needs it}}
  attn.barrier
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  // expected-remark @below {{needed: without it, attn.load_frag reads 'Q' slot 0 before the attn.copy_async that fills it has landed: no attn.async_wait retires its group first}}
  // expected-remark @below {{needed: without it, attn.load_frag reads 'Q' slot 0 before the attn.copy_async that fills it is visible to every warp: no attn.barrier follows the attn.async_wait that retires it}}
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  // expected-remark @below {{needed: without it, attn.copy_async writes 'V' slot 0 while another warp may still read those bytes in the attn.load_frag noted: no attn.barrier separates them}}
  attn.copy_async %v[%b, %m, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
}
