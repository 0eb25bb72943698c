// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles,attn-pipeline-copies,attn-allocate-shared-memory,attn-insert-barriers))' | FileCheck %s
// The expansion writes no wait and no barrier; these are the ones the pass
// places in the built-in programs: FlashAttention-2's schedule.

// 1 stage, Q in registers: V takes Q's bytes. Q waits alone (K[end-1] stays
// in flight). In the loop, one wait + barrier covers both K[j] landing and
// the previous P V (and Q's last read) being done with V's slot; the second
// covers V[j] and Q K[j]^T being done with K's slot. The O staging tile
// reuses the bytes too and gets its own wait and barrier after the loops.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @one_stage_q_in_regs
// CHECK:         %[[QS:.*]] = attn.smem_alloc {name = "Q", offset = 0 : i64}
// CHECK:         %[[KS:.*]] = attn.smem_alloc {name = "K"
// CHECK:         %[[VS:.*]] = attn.smem_alloc {name = "V", offset = 0 : i64}
// CHECK:         %[[OS:.*]] = attn.smem_alloc {name = "O", offset = 0 : i64}
// CHECK:         attn.copy_async %{{.*}} -> %[[QS]]
// CHECK:         attn.copy_async %{{.*}} -> %[[KS]]
// CHECK-NEXT:    attn.async_wait {pending = 1 : i64}
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.load_frag %[[QS]]
// CHECK-NOT:     attn.barrier
// CHECK:         attn.kv_loop
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK-NEXT:      attn.copy_async %{{.*}} -> %[[VS]]
// CHECK-NEXT:      attn.mma
// CHECK:           attn.online_softmax
// CHECK-NEXT:      attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK:           attn.copy_async %{{.*}} -> %[[KS]]
// CHECK-NEXT:      attn.mma
// CHECK:         attn.kv_loop
// CHECK:           attn.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    attn.async_wait {pending = 0 : i64}
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.epilogue %{{.*}}, %{{.*}}, %{{.*}}, %[[OS]]
attn.kernel @one_stage_q_in_regs arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// 2 stages, Q in registers: the prologue copies V[end-1] right after Q moves
// to registers, into Q's bytes: a barrier separates them. In the loop each
// wait leaves the 2 younger groups in flight.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @two_stages_q_in_regs
// CHECK:         %[[QS:.*]] = attn.smem_alloc {name = "Q", offset = [[OFF:[0-9]+]] : i64}
// CHECK:         %[[KS:.*]] = attn.smem_alloc {name = "K"
// CHECK:         %[[VS:.*]] = attn.smem_alloc {name = "V", offset = [[OFF]] : i64}
// CHECK:         attn.async_wait {pending = 1 : i64}
// CHECK-NEXT:    attn.barrier
// CHECK-NEXT:    attn.load_frag %[[QS]]
// CHECK-NEXT:    attn.barrier
// CHECK:         attn.copy_async %{{.*}} -> %[[VS]]
// CHECK-NOT:     attn.barrier
// CHECK:         attn.copy_async %{{.*}} -> %[[KS]]
// CHECK:         attn.kv_loop
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      attn.async_wait {pending = 2 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK:           attn.copy_async %{{.*}} -> %[[VS]]
// CHECK-NEXT:      attn.mma
// CHECK:           attn.online_softmax
// CHECK-NEXT:      attn.async_wait {pending = 2 : i64}
// CHECK-NEXT:      attn.barrier
// CHECK:           attn.copy_async %{{.*}} -> %[[KS]]
// CHECK-NEXT:      attn.mma
attn.kernel @two_stages_q_in_regs arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 2, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
