// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-insert-barriers))' | FileCheck %s

// Hand-written tile programs carry no wait and no barrier; the pass places
// them. V reuses Q's bytes (both at offset 0): Q must land before it is
// read, and every warp must be done reading Q before V's copy overwrites it.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @q_to_v_reuse
// CHECK:         %[[QS:.*]] = attn.smem_alloc {name = "Q", offset = 0 : i64}
// CHECK:         %[[VS:.*]] = attn.smem_alloc {name = "V", offset = 0 : i64}
// CHECK:         attn.copy_async %{{.*}} -> %[[QS]]
// CHECK-NEXT:    attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.load_frag %[[QS]]
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.copy_async %{{.*}} -> %[[VS]]
attn.kernel @q_to_v_reuse arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.copy_async %v[%b, %m, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
}

// -----

// The loop's copies land in one slot: each waits for the previous one and
// for every warp (a wait and a barrier in the body). That barrier also
// separates Q's read before the loop from V's first copy into Q's bytes, so
// none goes before the loop.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @reuse_inside_loop
// CHECK:         attn.load_frag
// CHECK-NEXT:    attn.kv_loop
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK-NEXT:      attn.copy_async
// CHECK-NEXT:    }
attn.kernel @reuse_inside_loop arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.kv_loop %m to %sk {
  ^bb0(%j: index):
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
  }
}

// -----

// A KV loop with the wait before P V[j] removed (the rest is the 1-stage
// schedule): the pass puts it back, before the barrier that was there, with
// pending 0 since V[j] is the youngest group then. A stray barrier at the
// top of the kernel is proven unneeded and removed.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @wait_removed
// CHECK:         attn.block_context
// CHECK-NOT:     attn.barrier
// CHECK:         attn.copy_async
// CHECK:         attn.kv_loop
// CHECK:           attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK-NEXT:      attn.copy_async %{{.*}} -> %[[VS:.*]] :
// CHECK-NEXT:      attn.mma
// CHECK-NEXT:      attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK-NEXT:      arith.subi
// CHECK-NEXT:      attn.copy_async
// CHECK-NEXT:      attn.mma
attn.kernel @wait_removed arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %ks = attn.smem_alloc {name = "K", offset = 8192 : i64} : memref<1x32x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 12288 : i64} : memref<1x32x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.barrier
  %c1 = arith.constant 1 : index
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  %last = arith.subi %sk, %c1 : index
  attn.copy_async %k[%b, %last, %hkv] -> %ks : !t -> memref<1x32x64xf16, 3>
  attn.async_wait {pending = 1}
  attn.barrier
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  %p = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf16>
  %acc0 = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %acc = attn.kv_loop %m to %sk iter_args(%acc0) : !attn.frag<64x64xf32> -> !attn.frag<64x64xf32> {
  ^bb0(%j: index, %a: !attn.frag<64x64xf32>):
    attn.async_wait {pending = 0}
    attn.barrier
    attn.copy_async %v[%b, %j, %hkv] -> %vs : !t -> memref<1x32x64xf16, 3>
    %s = attn.mma %qf, %ks[%j] {transpose_b} : !attn.frag<64x64xf16>, memref<1x32x64xf16, 3> -> !attn.frag<64x32xf32>
    attn.barrier
    %prev = arith.subi %j, %c1 : index
    attn.copy_async %k[%b, %prev, %hkv] -> %ks : !t -> memref<1x32x64xf16, 3>
    %a1 = attn.mma %p, %vs[%j], %a : !attn.frag<64x32xf16>, memref<1x32x64xf16, 3>, !attn.frag<64x64xf32> -> !attn.frag<64x64xf32>
    attn.yield %a1 : !attn.frag<64x64xf32>
  }
}

// -----

// Disjoint bytes, and a load whose copy is already visible: nothing to add.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @no_shared_bytes
// CHECK:         attn.load_frag
// CHECK-NEXT:    attn.copy_async
attn.kernel @no_shared_bytes arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x64x64xf16, 3>
  %vs = attn.smem_alloc {name = "V", offset = 8192 : i64} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
  attn.async_wait {pending = 0}
  attn.barrier
  %qf = attn.load_frag %qs : memref<1x64x64xf16, 3> -> !attn.frag<64x64xf16>
  attn.copy_async %v[%b, %m, %hkv] -> %vs : !t -> memref<1x64x64xf16, 3>
}
