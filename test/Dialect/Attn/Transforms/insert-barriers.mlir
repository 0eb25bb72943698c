// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-insert-barriers))' | FileCheck %s

// V reuses Q's bytes (both at offset 0) and nothing orders Q's last read
// before V's first write: a barrier goes in between, at the top level.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @q_to_v_reuse
// CHECK:         %[[QS:.*]] = attn.smem_alloc {name = "Q", offset = 0 : i64}
// CHECK:         %[[VS:.*]] = attn.smem_alloc {name = "V", offset = 0 : i64}
// CHECK:         attn.load_frag %[[QS]]
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.copy_async %{{.*}} -> %[[VS]]
attn.kernel @q_to_v_reuse arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  attn.async_wait {pending = 0}
  attn.barrier
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.copy_async %v[%b, %m, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
}

// -----

// The first write of the new owner sits inside the KV loop: the barrier goes
// before the loop, never into its body.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @reuse_inside_loop
// CHECK:         attn.load_frag
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.kv_loop
// CHECK-NOT:       attn.barrier
// CHECK:           attn.copy_async
// CHECK:         }
attn.kernel @reuse_inside_loop arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.kv_loop %m to %sk {
  ^bb0(%j: index):
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
  }
}

// -----

// A barrier the pipeline already has (at the top of the loop body, before the
// write) serves; none is added.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @existing_barrier
// CHECK:         attn.load_frag
// CHECK-NEXT:    attn.kv_loop
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      attn.barrier
// CHECK-NEXT:      attn.copy_async
// CHECK-NOT:     attn.barrier
attn.kernel @existing_barrier arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.kv_loop %m to %sk {
  ^bb0(%j: index):
    attn.barrier
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
  }
}

// -----

// Disjoint bytes need no barrier even when the lifetimes are disjoint.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @no_shared_bytes
// CHECK-NOT:     attn.barrier
attn.kernel @no_shared_bytes arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 8192 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.copy_async %v[%b, %m, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
}
