module {
  attn.kernel @sigmoid_attention arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true>) attributes {arg_names = ["bias"]} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: f32):
    %0 = attn.smem_alloc {name = "Q"} : memref<1x128x128xbf16, 3>
    %1 = attn.smem_alloc {name = "K"} : memref<1x128x128xbf16, 3>
    %2 = attn.smem_alloc {name = "V"} : memref<1x128x128xbf16, 3>
    %3 = attn.smem_alloc {name = "O"} : memref<1x128x128xbf16, 3>
    %m_block, %head, %kv_head, %batch, %seqlen_q, %seqlen_k = attn.block_context %arg0, %arg1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
    %begin, %unmasked_begin, %unmasked_end, %end = attn.kv_bounds %m_block, %seqlen_q, %seqlen_k {tile_m = 128 : i64, tile_n = 128 : i64, window_left = -1 : i64, window_right = -1 : i64}
    attn.copy_async %arg0[%batch, %m_block, %head] -> %0 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
    %c1 = arith.constant 1 : index
    %4 = arith.subi %end, %c1 : index
    attn.copy_async %arg1[%batch, %4, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
    %5 = attn.load_frag %0 : memref<1x128x128xbf16, 3> -> !attn.frag<128x128xbf16>
    %6 = attn.softmax_scale {default_value = 0.0883883461 : f32} : f32
    %7 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x128xf32>
    %8 = attn.kv_loop %unmasked_end to %end iter_args(%7) : !attn.frag<128x128xf32> -> !attn.frag<128x128xf32> attributes {masked} {
    ^bb0(%arg6: index, %arg7: !attn.frag<128x128xf32>):
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %10 = attn.mma_qk %5, %1[%arg6] : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %11 = attn.mask %10, %m_block, %arg6, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = -1 : i64} : !attn.frag<128x128xf32>
      %12 = attn.map %11, %6 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %cst = arith.constant 5.000000e-01 : f32
        %16 = arith.mulf %cst, %arg5 : f32
        %cst_1 = arith.constant 5.000000e-01 : f32
        %17 = arith.mulf %cst_1, %arg9 : f32
        %18 = arith.mulf %arg8, %17 : f32
        %19 = arith.addf %18, %16 : f32
        %20 = math.tanh %19 : f32
        %cst_2 = arith.constant 5.000000e-01 : f32
        %21 = arith.mulf %cst_2, %20 : f32
        %cst_3 = arith.constant 5.000000e-01 : f32
        %22 = arith.addf %cst_3, %21 : f32
        attn.yield %22 : f32
      }
      %c1_0 = arith.constant 1 : index
      %13 = arith.subi %arg6, %c1_0 : index
      attn.copy_async %arg1[%batch, %13, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %14 = attn.convert %12 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %15 = attn.mma_pv %14, %2[%arg6], %arg7 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32>
      attn.yield %15 : !attn.frag<128x128xf32>
    }
    %9 = attn.kv_loop %unmasked_begin to %unmasked_end iter_args(%8) : !attn.frag<128x128xf32> -> !attn.frag<128x128xf32> {
    ^bb0(%arg6: index, %arg7: !attn.frag<128x128xf32>):
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %10 = attn.mma_qk %5, %1[%arg6] : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %11 = attn.map %10, %6 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %cst = arith.constant 5.000000e-01 : f32
        %15 = arith.mulf %cst, %arg5 : f32
        %cst_1 = arith.constant 5.000000e-01 : f32
        %16 = arith.mulf %cst_1, %arg9 : f32
        %17 = arith.mulf %arg8, %16 : f32
        %18 = arith.addf %17, %15 : f32
        %19 = math.tanh %18 : f32
        %cst_2 = arith.constant 5.000000e-01 : f32
        %20 = arith.mulf %cst_2, %19 : f32
        %cst_3 = arith.constant 5.000000e-01 : f32
        %21 = arith.addf %cst_3, %20 : f32
        attn.yield %21 : f32
      }
      %c1_0 = arith.constant 1 : index
      %12 = arith.subi %arg6, %c1_0 : index
      attn.copy_async %arg1[%batch, %12, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %13 = attn.convert %11 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %14 = attn.mma_pv %13, %2[%arg6], %arg7 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32>
      attn.yield %14 : !attn.frag<128x128xf32>
    }
    attn.store %9, %3 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x128xf32>, memref<1x128x128xbf16, 3> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

