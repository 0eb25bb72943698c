module {
  attn.kernel @flash_fwd arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 64, stages = 1, warps = 4, q_in_regs = true>) attributes {problem = #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 1.250000e-01 : f32>, smem_bytes = 24576 : i64} {
  ^bb0(%arg0: memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>):
    %0 = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x128x64xf16, 3>
    %1 = attn.smem_alloc {name = "K", offset = 16384 : i64} : memref<1x64x64xf16, 3>
    %2 = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x64x64xf16, 3>
    %3 = attn.smem_alloc {name = "O", offset = 0 : i64} : memref<1x128x64xf16, 3>
    %m_block, %head, %kv_head, %batch, %seqlen_q, %seqlen_k = attn.block_context %arg0, %arg1 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
    %begin, %unmasked_begin, %unmasked_end, %end = attn.kv_bounds %m_block, %seqlen_q, %seqlen_k {tile_m = 128 : i64, tile_n = 64 : i64, window_left = -1 : i64, window_right = 0 : i64}
    attn.copy_async %arg0[%batch, %m_block, %head] -> %0 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>> -> memref<1x128x64xf16, 3>
    %c1 = arith.constant 1 : index
    %4 = arith.subi %end, %c1 : index
    attn.copy_async %arg1[%batch, %4, %kv_head] -> %1 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>> -> memref<1x64x64xf16, 3>
    attn.async_wait {pending = 1 : i64}
    attn.barrier
    %5 = attn.load_frag %0 : memref<1x128x64xf16, 3> -> !attn.frag<128x64xf16>
    %6 = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
    %cst = arith.constant 1.44269502 : f32
    %7 = arith.mulf %6, %cst : f32
    %8 = attn.splat {value = 0xFF800000 : f32} : !attn.frag<128xf32>
    %9 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
    %10 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x64xf32>
    %11:3 = attn.kv_loop %unmasked_end to %end iter_args(%8, %9, %10) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32> attributes {masked} {
    ^bb0(%arg5: index, %arg6: !attn.frag<128xf32>, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128x64xf32>):
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      attn.copy_async %arg2[%batch, %arg5, %kv_head] -> %2 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>> -> memref<1x64x64xf16, 3>
      %13 = attn.mma %5, %1[%arg5] {transpose_b} : !attn.frag<128x64xf16>, memref<1x64x64xf16, 3> -> !attn.frag<128x64xf32>
      %14 = attn.mask %13, %m_block, %arg5, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = 0 : i64} : !attn.frag<128x64xf32>
      %p, %new_row_max, %new_row_sum, %new_acc = attn.online_softmax %14, %arg6, %arg7, %arg8, %7 : !attn.frag<128x64xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32> -> !attn.frag<128x64xf16>
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      %c1_0 = arith.constant 1 : index
      %15 = arith.subi %arg5, %c1_0 : index
      attn.copy_async %arg1[%batch, %15, %kv_head] -> %1 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>> -> memref<1x64x64xf16, 3>
      %16 = attn.mma %p, %2[%arg5], %new_acc : !attn.frag<128x64xf16>, memref<1x64x64xf16, 3>, !attn.frag<128x64xf32> -> !attn.frag<128x64xf32>
      attn.yield %new_row_max, %new_row_sum, %16 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32>
    }
    %12:3 = attn.kv_loop %unmasked_begin to %unmasked_end iter_args(%11#0, %11#1, %11#2) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32> {
    ^bb0(%arg5: index, %arg6: !attn.frag<128xf32>, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128x64xf32>):
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      attn.copy_async %arg2[%batch, %arg5, %kv_head] -> %2 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>> -> memref<1x64x64xf16, 3>
      %13 = attn.mma %5, %1[%arg5] {transpose_b} : !attn.frag<128x64xf16>, memref<1x64x64xf16, 3> -> !attn.frag<128x64xf32>
      %p, %new_row_max, %new_row_sum, %new_acc = attn.online_softmax %13, %arg6, %arg7, %arg8, %7 : !attn.frag<128x64xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32> -> !attn.frag<128x64xf16>
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      %c1_0 = arith.constant 1 : index
      %14 = arith.subi %arg5, %c1_0 : index
      attn.copy_async %arg1[%batch, %14, %kv_head] -> %1 : memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>> -> memref<1x64x64xf16, 3>
      %15 = attn.mma %p, %2[%arg5], %new_acc : !attn.frag<128x64xf16>, memref<1x64x64xf16, 3>, !attn.frag<128x64xf32> -> !attn.frag<128x64xf32>
      attn.yield %new_row_max, %new_row_sum, %15 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x64xf32>
    }
    attn.async_wait {pending = 0 : i64}
    attn.barrier
    attn.epilogue %12#2, %12#0, %12#1, %3, %6 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x64xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, memref<1x128x64xf16, 3> -> memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

