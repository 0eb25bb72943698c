// RUN: flashtile-opt %s -verify-diagnostics -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-insert-barriers))'

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @not_allocated arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{has no offset; run attn-allocate-shared-memory first}}
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xf16, 3>
}

// -----

// The prologue copies K[end-2] where the loop first reads K[end-1]: no wait
// or barrier can make the slot hold the right tile.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @stale_slot arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x32x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c2 = arith.constant 2 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %wrong = arith.subi %sk, %c2 : index
  // expected-note @below {{the conflicting access}}
  attn.copy_async %k[%b, %wrong, %hkv] -> %ks : !t -> memref<1x32x64xf16, 3>
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.kv_loop %m to %sk {
  ^bb0(%j: index):
    // expected-error @below {{'attn.mma' op cannot be synchronized: attn.mma reads 'K' slot 0, which holds another tile then (written by the attn.copy_async noted)}}
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x64xf16>, memref<1x32x64xf16, 3> -> !attn.frag<64x32xf32>
  }
}

// -----

// A buffer read before any copy fills it.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @never_filled arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  // expected-error @below {{'attn.load_frag' op cannot be synchronized: attn.load_frag reads 'Q' slot 0, which no copy has filled}}
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
}

// -----

// An access the race checker does not model is refused, not trusted.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @unmodelled_access arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op uses shared buffer 'Q' in a way the barrier pass does not model}}
  %x = memref.load %qs[%c0, %c0, %c0] : memref<1x64x64xf16, 3>
}

// -----

// Only top-level KV loops are modelled.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @nested_loop arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.kv_loop %m to %sk {
  ^bb0(%j: index):
    // expected-error @below {{'attn.kv_loop' op is nested in another loop; the barrier pass proves top-level KV loops only}}
    attn.kv_loop %m to %j {
    ^bb0(%i: index):
    }
  }
}
