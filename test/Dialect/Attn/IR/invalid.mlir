// RUN: flashtile-opt %s -split-input-file -verify-diagnostics
// Every verifier error of the attn dialect, one per split.

!t = memref<?x?x?x100xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{head_dim = 100 is not supported: it must be a multiple of 8 from 8 to 256}}
attn.kernel @head_dim_not_multiple_of_32 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x264xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{head_dim = 264 is not supported}}
attn.kernel @head_dim_over_256 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!u = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{mismatched dtypes: Q is 'f16' but V is 'bf16'}}
attn.kernel @mismatched_dtypes arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !u, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf32, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{Q has element type 'f32'; supported: f16, bf16}}
attn.kernel @f32_inputs arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf16>
// expected-error @below {{LSE must be f32, got 'f16'}}
attn.kernel @lse_not_f32 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!k = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{K has head_dim 64 but Q has 128}}
attn.kernel @k_head_dim arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !k, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!o = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{O has head_dim 64 but V has 128}}
attn.kernel @o_head_dim arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !o, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!s = memref<?x?x?x128xf16, strided<[?, ?, ?, 2]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{Q must have a contiguous last dimension (stride 1)}}
attn.kernel @strided_last_dim arch(#attn.arch<sm_120>) {
^bb0(%q: !s, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{expects 5 tensor arguments (Q, K, V, O, LSE), got 4}}
attn.kernel @missing_lse arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{tile_m = 64 with warps = 8 does not give each warp whole 16-row mma tiles: tile_m must be a multiple of 16 * warps = 128 and at most 256}}
attn.kernel @warps_do_not_divide_tile arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{tile_n = 40 must be a multiple of 16 (the K of the PV mma.m16n8k16) from 16 to 256}}
attn.kernel @tile_n_not_mma_multiple arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 40, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{warps = 3 must be a power of two from 1 to 16}}
attn.kernel @warps_not_power_of_two arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 96, tile_n = 64, stages = 1, warps = 3, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{stages = 5 must be from 1 to 4}}
attn.kernel @too_many_stages arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 5, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

// expected-error @below {{unknown chip 'sm_70'; known chips: sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120, sm_121}}
attn.kernel @unknown_chip arch(#attn.arch<sm_70>) {
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @causal_and_right_window arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{causal conflicts with window_right = 4: causal means window_right = 0}}
  attn.attention %q, %k, %v -> %o, %lse {causal, window_right = 4} : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @bad_window arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{window (-2, -1) is invalid: each side is -1 (unbounded) or a number of keys from 0 to 536870911}}
  attn.attention %q, %k, %v -> %o, %lse {window_left = -2} : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @negative_scale arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{softmax_scale = -1.000000e+00 must be finite and positive}}
  attn.attention %q, %k, %v -> %o, %lse {softmax_scale = -1.0 : f32} : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @swapped_operands arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{operand #0 must be the kernel's Q argument}}
  attn.attention %k, %q, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @score_mod_signature arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{score_mod region must take (f32, index, index, index, index), got (f32)}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32):
    attn.yield %s : f32
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mask_mod_yield arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{mask_mod region must yield exactly one 'i1'}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    attn.yield %i : index
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @smem_not_shared arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{buffer must be in shared memory (address space 3), got 'memref<1x64x128xf16>'}}
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @negative_offset arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{offset = -128 is negative}}
  %qs = attn.smem_alloc {name = "Q", offset = -128 : i64} : memref<1x64x128xf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @copy_dtype arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{copies 'f16' into a 'bf16' buffer}}
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x128xbf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @copy_row_width arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{source rows have 128 elements, so buffer rows must have 128 (padded to whole swizzle groups), got 64}}
  attn.copy_async %q[%b, %m, %h] -> %qs : !t -> memref<1x64x64xf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @load_frag_shape arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16, 3>
  // expected-error @below {{result must be '!attn.frag<64x128xf16>', got '!attn.frag<128x128xf16>'}}
  %qf = attn.load_frag %qs : memref<1x64x128xf16, 3> -> !attn.frag<128x128xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_s_head_dim arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A has K = 128 but B's tile has 64 columns}}
  %s = attn.mma %qs, %ks[%c0] {transpose_b} : memref<1x64x128xf16, 3>, memref<1x64x64xf16, 3> -> !attn.frag<64x64xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_s_result arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x32x128xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{result must be '!attn.frag<64x32xf16, acc>', got '!attn.frag<64x32xf16>'}}
  %s = attn.mma %qs, %ks[%c0] {transpose_b} : memref<1x64x128xf16, 3>, memref<1x32x128xf16, 3> -> !attn.frag<64x32xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_acc_dtype arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %vs = attn.smem_alloc {name = "V"} : memref<1x32x128xf16, 3>
  %p = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xbf16>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{mismatched operand types: A is 'bf16', B is 'f16'}}
  %r = attn.mma %p, %vs[%c0], %acc : !attn.frag<64x32xbf16>, memref<1x32x128xf16, 3>, !attn.frag<64x128xf32> -> !attn.frag<64x128xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @softmax_rows arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  %m = attn.splat {value = 0.0 : f32} : !attn.frag<128xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{row_max must be '!attn.frag<64xf32>', got '!attn.frag<128xf32>'}}
  %p, %m1, %l1, %a1 = attn.online_softmax %s, %m, %m, %acc, %c
      : !attn.frag<64x32xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<64x128xf32> -> !attn.frag<64x32xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @epilogue_stage arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x32x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{staging buffer must be 1x64x128, got 'memref<1x32x128xf16, 3>'}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse
    : !attn.frag<64x128xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x32x128xf16, 3> -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kv_loop_yield arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c0 = arith.constant 0 : index
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %w = attn.splat {value = 0.0 : f32} : !attn.frag<32xf32>
  // expected-error @below {{body must yield '!attn.frag<64xf32>'}}
  %x = attn.kv_loop %c0 to %c0 iter_args(%r) : !attn.frag<64xf32> -> !attn.frag<64xf32> {
  ^bb0(%j: index, %ri: !attn.frag<64xf32>):
    attn.yield %w : !attn.frag<32xf32>
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @frag_rank_3 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{!attn.frag must have rank 1 or 2, got rank 3}}
  %x = attn.splat {value = 0.0 : f32} : !attn.frag<2x64x64xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{Q must be a rank-4 memref, got 'memref<?x?x128xf16>'}}
attn.kernel @rank3_q arch(#attn.arch<sm_120>) {
^bb0(%q: memref<?x?x128xf16>, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x?xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{head_dim must be static}}
attn.kernel @dynamic_head_dim arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @smem_dynamic arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{buffer must have a static shape and the identity layout, got 'memref<1x?x128xf16, 3>'}}
  %qs = attn.smem_alloc {name = "Q"} : memref<1x?x128xf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @load_frag_slots arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<2x64x128xf16, 3>
  // expected-error @below {{source must have one slot, got 2}}
  %qf = attn.load_frag %qs : memref<2x64x128xf16, 3> -> !attn.frag<64x128xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_s_q_slots arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<2x64x128xf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x32x128xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A's buffer has 2 slots, so A needs a slot index: %a[%tile]}}
  %s = attn.mma %qs, %ks[%c0] {transpose_b} : memref<2x64x128xf16, 3>, memref<1x32x128xf16, 3> -> !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_s_dtypes arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qf = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xbf16>
  %ks = attn.smem_alloc {name = "K"} : memref<1x32x128xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{mismatched operand types: A is 'bf16', B is 'f16'}}
  %s = attn.mma %qf, %ks[%c0] {transpose_b} : !attn.frag<64x128xbf16>, memref<1x32x128xf16, 3> -> !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_s_q_rank arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qf = attn.splat {value = 0.0 : f32} : !attn.frag<64xf16>
  %ks = attn.smem_alloc {name = "K"} : memref<1x32x128xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A in registers must be an 'a'-layout fragment (attn.convert makes one from an accumulator), got '!attn.frag<64xf16>'}}
  %s = attn.mma %qf, %ks[%c0] {transpose_b} : !attn.frag<64xf16>, memref<1x32x128xf16, 3> -> !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @softmax_scores arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf16>
  %m = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{scores must be a rank-2 f32 fragment, got '!attn.frag<64x32xf16>'}}
  %p, %m1, %l1, %a1 = attn.online_softmax %s, %m, %m, %acc, %c
      : !attn.frag<64x32xf16>, !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32> -> !attn.frag<64x32xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @softmax_acc arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  %m = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<32x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{acc must be an f32 fragment with 64 rows, got '!attn.frag<32x128xf32>'}}
  %p, %m1, %l1, %a1 = attn.online_softmax %s, %m, %m, %acc, %c
      : !attn.frag<64x32xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<32x128xf32> -> !attn.frag<64x32xf16>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @softmax_p arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  %m = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{P must be an f16 or bf16 fragment shaped like S, got '!attn.frag<64x32xf32>'}}
  %p, %m1, %l1, %a1 = attn.online_softmax %s, %m, %m, %acc, %c
      : !attn.frag<64x32xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x128xf32> -> !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_acc_keys arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %vs = attn.smem_alloc {name = "V"} : memref<1x64x128xf16, 3>
  %p = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf16>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A has K = 32 but B's tile has 64 rows}}
  %r = attn.mma %p, %vs[%c0], %acc : !attn.frag<64x32xf16>, memref<1x64x128xf16, 3>, !attn.frag<64x128xf32> -> !attn.frag<64x128xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_acc_rank arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %vs = attn.smem_alloc {name = "V"} : memref<1x32x128xf16, 3>
  %p = attn.splat {value = 0.0 : f32} : !attn.frag<64xf16>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A in registers must be an 'a'-layout fragment (attn.convert makes one from an accumulator), got '!attn.frag<64xf16>'}}
  %r = attn.mma %p, %vs[%c0], %acc : !attn.frag<64xf16>, memref<1x32x128xf16, 3>, !attn.frag<64x128xf32> -> !attn.frag<64x128xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kv_loop_body arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c0 = arith.constant 0 : index
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  // expected-error @below {{body must take (index, '!attn.frag<64xf32>')}}
  %x = attn.kv_loop %c0 to %c0 iter_args(%r) : !attn.frag<64xf32> -> !attn.frag<64xf32> {
  ^bb0(%j: index, %ri: !attn.frag<32xf32>):
    attn.yield %r : !attn.frag<64xf32>
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kv_loop_results arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c0 = arith.constant 0 : index
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  // expected-error @below {{results must match iter_args}}
  %x = attn.kv_loop %c0 to %c0 iter_args(%r) : !attn.frag<64xf32> -> !attn.frag<32xf32> {
  ^bb0(%j: index, %ri: !attn.frag<64xf32>):
    attn.yield %ri : !attn.frag<64xf32>
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @epilogue_acc arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{acc must be a rank-2 f32 fragment}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse
    : !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x64x128xf16, 3> -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @epilogue_stage_dtype arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{staging buffer is 'bf16' but O is 'f16'}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse
    : !attn.frag<64x128xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x64x128xbf16, 3> -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!w = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @epilogue_o_dim arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{O has head_dim 128 (padded: 128) but acc has 64 columns}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse
    : !attn.frag<64x64xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x64x64xf16, 3> -> !t, !lse
}

// -----

// A head dim whose rows are not whole 16-byte chunks (84 bf16 is 168
// bytes): the verifier refuses it, before any plan is printed.
!t = memref<?x?x?x84xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{head_dim = 84 is not supported: it must be a multiple of 8 from 8 to 256 (rows move in 16-byte chunks)}}
attn.kernel @d84 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

// The window's sides enter the kernel's 32-bit arithmetic: 2^32 would wrap to
// 0 and build the wrong kernel.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @window_too_wide arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{window (4294967296, 0) is invalid: each side is -1 (unbounded) or a number of keys from 0 to 536870911}}
  attn.attention %q, %k, %v -> %o, %lse {window_left = 4294967296, window_right = 0} : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{name 'a.b' cannot be a kernel's PTX name: character '.' is not allowed: use ASCII letters, digits and '_'}}
attn.kernel @"a.b" arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{name '0abc' cannot be a kernel's PTX name: it must start with a letter or '_'}}
attn.kernel @"0abc" arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{name '' cannot be a kernel's PTX name: it is empty}}
attn.kernel @"" arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{name '__flashtile_smem' cannot be a kernel's PTX name: names starting with '__flashtile' are reserved for the compiler's own symbols}}
attn.kernel @__flashtile_smem arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error-re @below {{name 'caf{{.*}}' cannot be a kernel's PTX name: byte 0xC3 is not allowed: use ASCII letters, digits and '_'}}
attn.kernel @"caf\C3\A9" arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has 1 extra argument(s) after its tensors but arg_names lists 0; name each extra argument}}
attn.kernel @unnamed_extra arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %x: i32):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra argument #5 name 'seqlen_q' is taken by the kernel's own arguments and sizes}}
attn.kernel @reserved_extra arch(#attn.arch<sm_120>) attributes {arg_names = ["seqlen_q"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %x: i32):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra argument name 'x' is used twice}}
attn.kernel @duplicate_extra arch(#attn.arch<sm_120>) attributes {arg_names = ["x", "x"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %a: i32, %b: f32):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra tensor 'table' has element type 'i16'; supported: f16, bf16, f32, i32, i64, i8, f8E4M3FN, f8E5M2}}
attn.kernel @bad_extra_tensor arch(#attn.arch<sm_120>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %t: memref<?xi16>):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra argument 'flag' has type 'i1'; supported: memref (tensor) or i32, i64, f32 (scalar)}}
attn.kernel @bad_extra_scalar arch(#attn.arch<sm_120>) attributes {arg_names = ["flag"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %f: i1):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra tensor 'table' has static stride 8 in dimension 0; strides are run-time values: use strided<[?, ..., ?]> (the last may be 1)}}
attn.kernel @static_stride_extra arch(#attn.arch<sm_120>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %t: memref<4x8xi64>):
}

// -----

// KV warps and packed GQA rows come together (the decode family).
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{kv_warps = 1 with pack_gqa = true: KV warps and packed GQA rows go together (the decode family: pack_gqa = true with kv_warps > 1)}}
attn.kernel @packed_without_kv_warps arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 1, warps = 1, q_in_regs = true, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{tile_n = 32 must be a multiple of 64 (the K of the PV mma.m16n8k16 times kv_warps) from 16 to 256}}
attn.kernel @kv_warps_slice_not_mma arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 32, stages = 1, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kv_split_unpacked arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %begin, %ub, %ue, %end = attn.kv_bounds %m, %sq, %sk {tile_m = 64, tile_n = 64, window_left = -1, window_right = -1}
  // expected-error @below {{splits KV in a kernel without packed rows: split-KV belongs to the decode family (pack_gqa)}}
  %b1, %ub1, %ue1, %e1 = attn.kv_split %begin, %ub, %ue, %end
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @packed_copy_unpacked arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{copies packed rows in a kernel whose config has no pack_gqa}}
  attn.copy_async %q[%b, %m, %h] -> %qs {packed} : !t -> memref<1x64x128xf16, 3>
}

// -----

// KV warps merge through the epilogue's merge buffer: without one, the
// partial states would be lost.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kv_warps_without_merge arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 1, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x16x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<16xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<16x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{needs a merge buffer: the kernel's config has kv_warps = 4}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse
    : !attn.frag<16x128xf32>, !attn.frag<16xf32>, !attn.frag<16xf32>, memref<1x16x128xf16, 3> -> !t, !lse
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @merge_wrong_shape arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 1, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x16x128xf16, 3>
  %mg = attn.smem_alloc {name = "merge"} : memref<2x16x136xf32, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<16xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<16x128xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{merge buffer must be f32 4x16x136 (kv_warps x tile_m x (head_dim_v + 8)), got 'memref<2x16x136xf32, 3>'}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse merge %mg
    : !attn.frag<16x128xf32>, !attn.frag<16xf32>, !attn.frag<16xf32>, memref<1x16x128xf16, 3> -> !t, !lse, memref<2x16x136xf32, 3>
}

// -----

// Paged KV: K and V copies must agree with the kernel's problem.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bt = memref<?x?xi32, strided<[?, ?]>>
attn.kernel @paged_copy_without_pages arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"], problem = #attn.problem<causal = false, window_left = -1, window_right = -1, softmax_scale = 1.0 : f32, page_table = 0>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{copies K or V of a kernel whose problem pages them by extra argument 0 without `pages` of it}}
  attn.copy_async %k[%b, %m, %hkv] -> %ks : !t -> memref<2x64x128xf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bt = memref<?x?xi32, strided<[?, ?]>>
attn.kernel @pages_without_problem arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  %ks = attn.smem_alloc {name = "K"} : memref<2x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{pages a copy, but the kernel's problem has no page_table}}
  attn.copy_async %k[%b, %m, %hkv] pages %table : !bt -> %ks : !t -> memref<2x64x128xf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bt = memref<?x?xi32, strided<[?, ?]>>
attn.kernel @paged_q arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"], problem = #attn.problem<causal = false, window_left = -1, window_right = -1, softmax_scale = 1.0 : f32, page_table = 0>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x128xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{pages a copy, but its source is not K or V}}
  attn.copy_async %q[%b, %m, %h] pages %table : !bt -> %qs : !t -> memref<1x64x128xf16, 3>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xi32, strided<[?]>>
// expected-error @below {{problem's page_table = 0 must name an extra i32 tensor of rank 2 (the kernel has 1 extra argument(s))}}
attn.kernel @page_table_wrong_arg arch(#attn.arch<sm_120>) attributes {arg_names = ["lengths"], problem = #attn.problem<causal = false, window_left = -1, window_right = -1, softmax_scale = 1.0 : f32, page_table = 0>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %lengths: !s):
}

// -----

// 8-bit operands are read with K contiguous: no .trans for bytes.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_8bit_layout arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xi8, 3>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xi8, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{8-bit operands are read with K contiguous: A as [M][K] (no transpose_a) and B as [N][K] (transpose_b); store V transposed for an 8-bit P V}}
  %d = attn.mma %as, %bs[%c0] : memref<1x64x64xi8, 3>, memref<1x64x64xi8, 3> -> !attn.frag<64x64xi32>
}

// -----

// The mma table decides the accumulator: i8 goes into i32, not f32.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_no_instruction arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xi8, 3>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xi8, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{no mma.sync multiplies 'i8' by 'i8' into 'f32' on sm_120; the table has f16/bf16 into f32, f16 into f16, i8 into i32 and f8E4M3FN/f8E5M2 into f32}}
  %d = attn.mma %as, %bs[%c0] {transpose_b} : memref<1x64x64xi8, 3>, memref<1x64x64xi8, 3> -> !attn.frag<64x64xf32>
}

// -----

// e4m3 needs sm_89 or later: sm_80 has no instruction for it.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_e4m3_sm80 arch(#attn.arch<sm_80>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xf8E4M3FN, 3>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xf8E4M3FN, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{no mma.sync multiplies 'f8E4M3FN' by 'f8E4M3FN' into 'f32' on sm_80}}
  %d = attn.mma %as, %bs[%c0] {transpose_b} : memref<1x64x64xf8E4M3FN, 3>, memref<1x64x64xf8E4M3FN, 3> -> !attn.frag<64x64xf32>
}

// -----

// ldmatrix loads B two n-tiles at a time: N must be a multiple of 16.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_shape arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xf16, 3>
  %bs = attn.smem_alloc {name = "B"} : memref<1x8x64xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{M x N x K = 64 x 8 x 64 must be whole multiples of 16 x 16 x 16 (the mma shape; ldmatrix loads B two n-tiles at a time)}}
  %d = attn.mma %as, %bs[%c0] {transpose_b} : memref<1x64x64xf16, 3>, memref<1x8x64xf16, 3> -> !attn.frag<64x8xf32>
}

// -----

// A in registers has no slot and no transpose.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_a_regs_transposed arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf16>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A in registers takes no slot and no transpose_a}}
  %d = attn.mma %a, %bs[%c0] {transpose_a, transpose_b} : !attn.frag<64x64xf16>, memref<1x64x64xf16, 3> -> !attn.frag<64x64xf32>
}

// -----

// An accumulator in registers is not an A operand until attn.convert.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @mma_a_is_acc arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf16, acc>
  %bs = attn.smem_alloc {name = "B"} : memref<1x64x64xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{A in registers must be an 'a'-layout fragment (attn.convert makes one from an accumulator), got '!attn.frag<64x64xf16, acc>'}}
  %d = attn.mma %a, %bs[%c0] {transpose_b} : !attn.frag<64x64xf16, acc>, memref<1x64x64xf16, 3> -> !attn.frag<64x64xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @frag_layout_unknown arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{unknown fragment layout 'b'; expected acc, a, rows or cols}}
  %x = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf16, b>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @frag_layout_rows arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{a fragment of rank 2 cannot have the 'rows' layout: rank 1 is 'rows' or 'cols', rank 2 'acc' or 'a'}}
  %x = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32, rows>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @frag_layout_a_f32 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{an A-operand fragment holds 16- or 8-bit elements, got 'f32'}}
  %x = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32, a>
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{arg_roles lists 1 role(s) for 2 extra argument(s)}}
attn.kernel @roles_count arch(#attn.arch<sm_120>) attributes {arg_names = ["a", "b"], arg_roles = ["in"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %a: memref<?x?xf32, strided<[?, 1]>>, %b: memref<?x?xf32, strided<[?, 1]>>):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra argument 'a' has role 'inout'; expected in, out or accumulate}}
attn.kernel @roles_unknown arch(#attn.arch<sm_120>) attributes {arg_names = ["a"], arg_roles = ["inout"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %a: memref<?x?xf32, strided<[?, 1]>>):
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{extra scalar 'n' is declared 'out'; a scalar is always an input ('in')}}
attn.kernel @roles_scalar arch(#attn.arch<sm_120>) attributes {arg_names = ["n"], arg_roles = ["out"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %n: i32):
}

// -----

// A store into a tensor the kernel declares an input is refused: the
// launch plan would not know the kernel writes it.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_tile_role arch(#attn.arch<sm_120>) attributes {arg_names = ["d"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %d: memref<?x?xf32, strided<[?, 1]>>):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{adds to tensor 'd', whose role is 'in'; declare it 'accumulate' in the kernel's arg_roles}}
  attn.store_tile %s -> %d[%c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> memref<?x?xf32, strided<[?, 1]>>
}

// -----

!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_tile_a_layout arch(#attn.arch<sm_120>) attributes {arg_names = ["d"], arg_roles = ["out"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %d: memref<?x?xf32, strided<[?, 1]>>):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf16, a>
  %c0 = arith.constant 0 : index
  // expected-error @below {{stores an accumulator of f32, f16 or i32, or an f32 row state, got '!attn.frag<64x64xf16>'}}
  attn.store_tile %s -> %d[%c0, %c0] : !attn.frag<64x64xf16, a> -> memref<?x?xf32, strided<[?, 1]>>
}

// -----

// The copy's column offset must start a 16-byte chunk, provably.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @copy_tile_col arch(#attn.arch<sm_120>) attributes {arg_names = ["a"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %a: memref<?x?xi8, strided<[?, 1]>>):
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xi8, 3>
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  // expected-error @below {{column offset must be a constant multiple of 16 (16 bytes of 'i8'), got 8}}
  attn.copy_tile %a[%c0, %c8] -> %as[%c0] : memref<?x?xi8, strided<[?, 1]>> -> memref<1x64x64xi8, 3>
}

// -----

// Tiles are copied from 2-d and (batch, rows, heads, dim) tensors.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @copy_tile_src arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %as = attn.smem_alloc {name = "A"} : memref<1x64x64xf32, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{copies a tile of a 2-d or (batch, rows, heads, dim) tensor, got 'memref<?x?x?xf32>'}}
  attn.copy_tile %lse[%c0, %c0] -> %as[%c0] : memref<?x?x?xf32> -> memref<1x64x64xf32, 3>
}

// -----

// Declared tensors (#attn.tensor): each is checked against its declaration.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{declares 2 tensors but has 1 arguments}}
attn.kernel @decl_count arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"do", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor 'do' has rows 'seqlen_q' and heads 'heads_kv'; expected seqlen_q and heads_q (query side) or seqlen_k and heads_kv (key side)}}
attn.kernel @decl_side arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"do", "in", "seqlen_q", "heads_kv">]} {
^bb0(%do: !t):
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor 'do' has role 'inout'; expected in, out, accumulate or workspace}}
attn.kernel @decl_role arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"do", "inout", "seqlen_q", "heads_q">]} {
^bb0(%do: !t):
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor name 'do' is used twice}}
attn.kernel @decl_twice arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"do", "in", "seqlen_q", "heads_q">, #attn.tensor<"do", "in", "seqlen_q", "heads_q">]} {
^bb0(%a: !t, %b: !t):
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor name 'seqlen_q' is taken by the kernel's own scalar and sizes}}
attn.kernel @decl_reserved arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"seqlen_q", "in", "seqlen_q", "heads_q">]} {
^bb0(%a: !t):
}

// -----

// expected-error @below {{tensor 'dq' is accumulated with f32 atomics, so it must be f32, got 'bf16'}}
attn.kernel @decl_accumulate arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q">]} {
^bb0(%dq: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>):
}

// -----

// expected-error @below {{tensor 'd' must be a rank-4 (batch, rows, heads, dim) or rank-3 (batch, heads, rows) memref, got 'memref<?x?xf32>'}}
attn.kernel @decl_rank arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"d", "out", "seqlen_q", "heads_q">]} {
^bb0(%d: memref<?x?xf32>):
}

// -----

// expected-error @below {{tensor 'd' must be f32, got 'bf16'}}
attn.kernel @decl_rows_type arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"d", "out", "seqlen_q", "heads_q">]} {
^bb0(%d: memref<?x?x?xbf16>):
}

// -----

// expected-error @below {{tensor 'dv' head dim = 60 is not supported}}
attn.kernel @decl_head_dim arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dv", "out", "seqlen_k", "heads_kv">]} {
^bb0(%dv: memref<?x?x?x60xbf16, strided<[?, ?, ?, 1]>>):
}

// -----

// expected-error @below {{mismatched dtypes: tensor 'dk' is 'f16' but an earlier tensor is 'bf16'}}
attn.kernel @decl_dtypes arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"do", "in", "seqlen_q", "heads_q">, #attn.tensor<"dk", "out", "seqlen_k", "heads_kv">]} {
^bb0(%do: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>, %dk: memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>):
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{extra argument #1 name 'do' is taken by the kernel's own arguments and sizes}}
attn.kernel @decl_extra_name arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"do", "in", "seqlen_q", "heads_q">], arg_names = ["do"]} {
^bb0(%do: !t, %x: i32):
}

// -----

// The forward's attention needs the forward's interface.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @decl_attention arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"k", "in", "seqlen_k", "heads_kv">, #attn.tensor<"v", "in", "seqlen_k", "heads_kv">, #attn.tensor<"o", "out", "seqlen_q", "heads_q">, #attn.tensor<"lse", "accumulate", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{needs the forward's tensors (q, k, v, o, lse: the kernel's default); the kernel declares others}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// attn.store_tile into declared tensors: one index per dimension.
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @store_declared_indices arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q">]} {
^bb0(%dq: !acc):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{takes 4 indices into 'memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>', got 2}}
  attn.store_tile %s -> %dq[%c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> !acc
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @store_declared_rows arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"d", "out", "seqlen_q", "heads_q">]} {
^bb0(%d: !acc):
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{stores a row state into a (batch, heads, rows) tensor, got 'memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>'}}
  attn.store_tile %r -> %d[%c0, %c0, %c0, %c0] : !attn.frag<64xf32> -> !acc
}

// -----

// Atomics add equal types: an f32 tile is rounded only by a plain store.
!b = memref<?x?xbf16, strided<[?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_round_add arch(#attn.arch<sm_120>) attributes {arg_names = ["d"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %d: !b):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{adds 'f32' into a tensor of 'bf16' (atomics add equal types)}}
  attn.store_tile %s -> %d[%c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> !b
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @store_declared_in arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dk", "in", "seqlen_k", "heads_kv">]} {
^bb0(%dk: !t):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{writes tensor 'dk', whose role is 'in'; declare it 'out' in its #attn.tensor}}
  attn.store_tile %s -> %dk[%c0, %c0, %c0, %c0] : !attn.frag<64x64xf32> -> !t
}

// -----

!h = memref<?x?xf16, strided<[?, 1]>>
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_f16_add arch(#attn.arch<sm_120>) attributes {arg_names = ["d"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %d: !h):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf16, acc>
  %c0 = arith.constant 0 : index
  // expected-error @below {{adds f16 with atomics; accumulate in f32}}
  attn.store_tile %s -> %d[%c0, %c0] {accumulate} : !attn.frag<64x64xf16, acc> -> !h
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has grid = "rows"; expected "queries" or "keys"}}
attn.kernel @grid_name arch(#attn.arch<sm_120>) attributes {grid = "rows"} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

// attn.attention expands to a query-parallel program.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has grid = "keys", whose blocks own key tiles; attn.attention tiles the query side}}
attn.kernel @grid_keys_attention arch(#attn.arch<sm_120>) attributes {grid = "keys"} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has grid = "keys", whose blocks own key tiles; packed rows (pack_gqa) tiles the query side}}
attn.kernel @grid_keys_packed arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) attributes {grid = "keys"} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

// A workspace is sized from the arguments.
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{workspace 'ws' is sized by 'seqlen_k', which no argument tensor is declared over; the plan takes sizes from the arguments}}
attn.kernel @workspace_sizes arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_k", "heads_kv">]} {
^bb0(%q: !t, %ws: !acc):
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @load_tile_out arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dq", "out", "seqlen_q", "heads_q">]} {
^bb0(%dq: !acc):
  %c0 = arith.constant 0 : index
  // expected-error @below {{reads tensor 'dq', whose role is 'out'; a kernel reads its inputs and workspaces (what it writes, other blocks may still be writing)}}
  %x = attn.load_tile %dq[%c0, %c0, %c0, %c0] : !acc -> !attn.frag<64x64xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @load_tile_bf16 arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"x", "in", "seqlen_q", "heads_q">]} {
^bb0(%x: !t):
  %c0 = arith.constant 0 : index
  // expected-error @below {{loads an f32 or i32 accumulator, or an f32 row or column vector, got '!attn.frag<64x64xbf16>'}}
  %y = attn.load_tile %x[%c0, %c0, %c0, %c0] : !t -> !attn.frag<64x64xbf16>
}

// -----

// A 16-bit float tensor widens into an f32 tile only.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @load_tile_i32_from_bf16 arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"x", "in", "seqlen_q", "heads_q">]} {
^bb0(%x: !t):
  %c0 = arith.constant 0 : index
  // expected-error @below {{loads 'i32' from a tensor of 'bf16' (an f32 tile reads f32, f16 or bf16; an i32 tile reads i32)}}
  %y = attn.load_tile %x[%c0, %c0, %c0, %c0] : !t -> !attn.frag<64x64xi32>
}

// -----

// expected-error @below {{lists @nowhere, which is no attn.kernel of the module}}
attn.family @lost kernels [@nowhere]

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @fam_a arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}
attn.kernel @fam_b arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["x"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %x: i32):
}
// expected-error @below {{lists @fam_b and @fam_a, whose arguments differ; a family's kernels declare the same tensors and extra arguments (the family's)}}
attn.family @mixed kernels [@fam_a, @fam_b]

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @fam_level arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
// expected-error @below {{lists @fam_level, which is not a tile program with a stated config; a family's kernels are}}
attn.family @level kernels [@fam_level]

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @copy_tile_out arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dq", "out", "seqlen_q", "heads_q">]} {
^bb0(%dq: !acc):
  %buf = attn.smem_alloc {name = "X"} : memref<1x64x64xf32, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{reads tensor 'dq', whose role is 'out'; a kernel reads its inputs and workspaces}}
  attn.copy_tile %dq[%c0, %c0, %c0, %c0] -> %buf[%c0] : !acc -> memref<1x64x64xf32, 3>
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @copy_tile_indices arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"x", "in", "seqlen_q", "heads_q">]} {
^bb0(%x: !acc):
  %buf = attn.smem_alloc {name = "X"} : memref<1x64x64xf32, 3>
  %c0 = arith.constant 0 : index
  // expected-error @below {{takes 4 indices into 'memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>', got 2}}
  attn.copy_tile %x[%c0, %c0] -> %buf[%c0] : !acc -> memref<1x64x64xf32, 3>
}

// -----

// attn.query_range's region is a key_range body: (batch, head, q_idx) ->
// (lo, hi).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_yield arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{region must yield (lo, hi) as two indices}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index):
    attn.yield %qi : index
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_args arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{region must take (index, index, index): batch, head, q_idx}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %qi: index):
    attn.yield %qi, %qi : index, index
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_tiles arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{tile sizes must be positive}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq attributes {tile_m = 0 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index):
    attn.yield %qi, %qi : index, index
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_neither arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{needs a key_range body or tables}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_one_table arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{takes 2 tables (the first and the end KV tile per query tile), got 1}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq tables %lse : !lse attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  }
}

// -----

// With `exact`, the tables carry each query tile's unmasked KV tiles too.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_exact_tables arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{takes 4 tables (the first and the end KV tile per query tile, then the unmasked first and end), got 2}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq tables %lse, %lse : !lse, !lse attributes {exact, tile_m = 64 : i64, tile_n = 64 : i64} {
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_both arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{takes a key_range body or tables, not both}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq tables %lse, %lse : !lse, !lse attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index):
    attn.yield %qi, %qi : index, index
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_range_table_type arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c1 = arith.constant 1 : index
  // expected-error @below {{tables are f32 (batch, heads, seqlen_q) tensors, got 'memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>'}}
  %r:4 = attn.query_range %m, %b, %h, %c1, %sq, %sk within %m, %m, %m, %sq tables %q, %q : !t, !t attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  }
}

// -----

// KV warps split K on the query grid (the decode family's partial sums),
// which needs packed rows.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has a config invalid on the query grid: kv_warps = 2 with pack_gqa = false: KV warps and packed GQA rows go together (the decode family: pack_gqa = true with kv_warps > 1)}}
attn.kernel @query_grid_kv_warps_unpacked arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

// A key-grid kernel's KV warps split columns: a B stored [K][N] without
// split_n would split K and leave partial sums.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @key_grid_split_k arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %c0 = arith.constant 0 : index
  %ps = attn.smem_alloc {name = "P"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  // expected-error @below {{reads B stored [K][N] in a key-grid kernel with 2 KV warps, which split columns: add split_n (a split of K would leave partial sums)}}
  %acc = attn.mma %ps, %qs[%c0] : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x64xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @split_n_transposed arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %c0 = arith.constant 0 : index
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  // expected-error @below {{split_n splits the columns of B stored [K][N] (no transpose_b) over a key-grid kernel's KV warps, with A read whole from a buffer; this mma has transpose_b}}
  %s = attn.mma %ks, %qs[%c0] {split_n, transpose_b} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @split_n_without_kv_warps arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %c0 = arith.constant 0 : index
  %ps = attn.smem_alloc {name = "P"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  // expected-error @below {{this mma has no KV warps that split columns (kv_warps > 1 on the key grid)}}
  %acc = attn.mma %ps, %qs[%c0] {split_n} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x64xf32>
}

// -----

// A row state is held by every KV warp of its rows: a store would race.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @key_grid_kv_warps_row_store arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"lse", "out", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %lse: memref<?x?x?xf32>):
  %c0 = arith.constant 0 : index
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  // expected-error @below {{stores a tile in a kernel with KV warps, whose row states every KV warp of a row holds}}
  attn.store_tile %r -> %lse[%c0, %c0, %c0] : !attn.frag<64xf32> -> memref<?x?x?xf32>
}

// -----

// With KV warps, a warp stores its share of a buffer's columns.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @store_frag_share arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %ps = attn.smem_alloc {name = "P"} : memref<1x64x64xbf16, 3>
  %p = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  // expected-error @below {{stores a 64 x 64 tile per KV warp (2) into a buffer of 64 x 64}}
  attn.store_frag %p -> %ps : !attn.frag<64x64xf32> -> memref<1x64x64xbf16, 3>
}

// -----

// split_n on the query grid (the decode family, whose KV warps split K).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @split_n_query_grid arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 1, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c0 = arith.constant 0 : index
  %ps = attn.smem_alloc {name = "P"} : memref<1x16x64xbf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<1x64x64xbf16, 3>
  // expected-error @below {{this mma has no KV warps that split columns (kv_warps > 1 on the key grid)}}
  %acc = attn.mma %ps, %vs[%c0] {split_n} : memref<1x16x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<16x16xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @split_n_a_in_registers arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %c0 = arith.constant 0 : index
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %a = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xbf16>
  // expected-error @below {{this mma has A in registers}}
  %acc = attn.mma %a, %qs[%c0] {split_n} : !attn.frag<64x64xbf16>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
}

// -----

// A fragment in a key-grid kernel with KV warps is the warp's share of its
// columns: as A in registers its K would be a share (a partial product).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @key_grid_a_in_registers arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %c0 = arith.constant 0 : index
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %s = attn.mma %ks, %qs[%c0] {transpose_b} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
  %a = attn.convert %s : !attn.frag<64x32xf32> -> !attn.frag<64x32xbf16>
  // expected-error @below {{takes A in registers in a key-grid kernel with 2 KV warps, where a fragment holds the warp's share of its columns (a partial product); stage A in shared memory (attn.store_frag) and read it from there}}
  %acc = attn.mma %a, %ks[%c0] {transpose_b} : !attn.frag<64x32xbf16>, memref<1x64x64xbf16, 3> -> !attn.frag<64x32xf32>
}

// -----

// The online softmax reduces whole rows; a key-grid kernel's KV warps hold
// column shares.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @key_grid_online_softmax arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys", tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  %c = arith.constant 1.0 : f32
  %max = attn.splat {value = 0xFF800000 : f32} : !attn.frag<64xf32>
  %sum = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{needs whole rows of scores, but this key-grid kernel's 2 KV warps each hold a share of the columns}}
  %p, %nmax, %nsum, %nacc = attn.online_softmax %s, %max, %sum, %acc, %c : !attn.frag<64x32xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, !attn.frag<64x32xf32> -> !attn.frag<64x32xbf16>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @key_grid_epilogue arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 8, q_in_regs = false, kv_warps = 2>) attributes {grid = "keys"} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xbf16, 3>
  %mg = attn.smem_alloc {name = "merge"} : memref<2x64x72xf32, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 0.0 : f32} : !attn.frag<64xf32>
  %acc = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  %c = arith.constant 1.0 : f32
  // expected-error @below {{needs an O of whole rows (or KV warps' partial sums over keys), but this key-grid kernel's 2 KV warps each hold a share of the columns}}
  attn.epilogue %acc, %r, %r, %os, %c -> %o[%b, %m, %h], %lse merge %mg
    : !attn.frag<64x64xf32>, !attn.frag<64xf32>, !attn.frag<64xf32>, memref<1x64x64xbf16, 3> -> !t, !lse, memref<2x64x72xf32, 3>
}

// -----

// On the query grid (the decode family) KV warps split K: a tile load or
// store would see partial values, so both stay refused there.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @query_grid_kv_warps_load_tile arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 1, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"d", "in", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %d: memref<?x?x?xf32>):
  %c0 = arith.constant 0 : index
  // expected-error @below {{loads a tile in a kernel with KV warps that split K (only a key-grid kernel's KV warps split columns, each loading its share)}}
  %x = attn.load_tile %d[%c0, %c0, %c0] : memref<?x?x?xf32> -> !attn.frag<16xf32, cols>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @query_grid_kv_warps_store_tile arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 1, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c0 = arith.constant 0 : index
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<16x64xf32>
  // expected-error @below {{stores a tile in a kernel with KV warps, whose accumulators are partial}}
  attn.store_tile %acc -> %o[%c0, %c0, %c0, %c0] : !attn.frag<16x64xf32> -> !t
}

// -----

// attn.block_ranges reads the entry of the tile its block owns: key_grid
// (the query tiles of a KV tile) only in a kernel whose blocks own KV tiles.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @block_ranges_key_grid arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{has key_grid (the query tiles of a KV tile), in a kernel whose blocks own query tiles; drop key_grid}}
  %r:4 = attn.block_ranges %m, %b, %hkv, %sq within %m, %m, %m, %m attributes {key_grid, tile_m = 64 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
    %true = arith.constant true
    attn.yield %true : i1
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @block_ranges_query_grid arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {grid = "keys"} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  // expected-error @below {{ranges the KV tiles of a query tile, in a kernel whose blocks own KV tiles (grid = "keys"); add key_grid}}
  %r:4 = attn.block_ranges %m, %b, %h, %sq within %m, %m, %m, %m attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
    %true = arith.constant true
    attn.yield %true : i1
  }
}

// -----

// A tensor in C-fragment tiles (#attn.tensor's order): a workspace only,
// rank-4 f32, accessed with c_tiles at tile-aligned indices.
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor 'ws' has order 'rows'; the one order is 'c_tiles'}}
attn.kernel @c_tiles_order_name arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "rows">]} {
^bb0(%q: !t, %ws: !acc):
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor 'dq' is in order 'c_tiles' but has role 'accumulate'; only a workspace (whose bytes the plan lays out) can be}}
attn.kernel @c_tiles_argument arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"dq", "accumulate", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%dq: !acc):
}

// -----

!lse = memref<?x?x?xf32, strided<[?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
// expected-error @below {{tensor 'ws' is stored in C-fragment tiles, so it must be a rank-4 f32 tensor, got 'memref<?x?x?xf32, strided<[?, ?, 1]>>'}}
attn.kernel @c_tiles_rank3 arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %ws: !lse):
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles_missing arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %ws: !acc):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  // expected-error @below {{accesses a tensor declared in order 'c_tiles' without c_tiles; add it (the builder does)}}
  attn.store_tile %s -> %ws[%c0, %c0, %c0, %c0] {accumulate} : !attn.frag<64x64xf32> -> !acc
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles_undeclared arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q">]} {
^bb0(%q: !t, %ws: !acc):
  %c0 = arith.constant 0 : index
  // expected-error @below {{has c_tiles, but its tensor is not declared in order 'c_tiles'}}
  %x = attn.load_tile %ws[%c0, %c0, %c0, %c0] {c_tiles} : !acc -> !attn.frag<64x64xf32>
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles_row_index arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %ws: !acc):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %q : !t, !t
  %row = arith.muli %m, %c8 : index
  // expected-error @below {{accesses a C-tiled tensor at a row index not known to be a multiple of 16 (a tile's first row); use a constant, or a product with one}}
  attn.store_tile %s -> %ws[%b, %row, %h, %c0] {accumulate, c_tiles} : !attn.frag<64x64xf32> -> !acc
}

// -----

!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles_column_index arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %ws: !acc):
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // expected-error @below {{accesses a C-tiled tensor at a column index that is not a non-negative constant multiple of 8 (a tile's first column)}}
  %x = attn.load_tile %ws[%c0, %c0, %c0, %c4] {c_tiles} : !acc -> !attn.frag<64x64xf32>
}

// -----

// A negative first column would pass the lowering's columns-left test.
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles_negative_column arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %ws: !acc):
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  %c0 = arith.constant 0 : index
  %cm8 = arith.constant -8 : index
  // expected-error @below {{accesses a C-tiled tensor at a column index that is not a non-negative constant multiple of 8 (a tile's first column)}}
  attn.store_tile %s -> %ws[%c0, %c0, %c0, %cm8] {accumulate, c_tiles} : !attn.frag<64x64xf32> -> !acc
}

// -----

// A copy reads rows through the strides, which a C-tiled tensor's alias.
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
attn.kernel @c_tiles_copy arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">, #attn.tensor<"ws", "workspace", "seqlen_q", "heads_q", "c_tiles">]} {
^bb0(%q: !t, %ws: !acc):
  %c0 = arith.constant 0 : index
  %buf = attn.smem_alloc {name = "W"} : memref<1x64x64xf32, 3>
  // expected-error @below {{copies from tensor 'ws', which is stored in C-fragment tiles; read it with attn.load_tile {c_tiles}}}
  attn.copy_tile %ws[%c0, %c0, %c0, %c0] -> %buf[%c0] : !acc -> memref<1x64x64xf32, 3>
}
