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
    %4 = attn.load_frag %0 : memref<1x128x128xbf16, 3> -> !attn.frag<128x128xbf16>
    %5 = attn.softmax_scale {default_value = 0.0883883461 : f32} : f32
    %6 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x128xf32>
    %7 = attn.kv_loop %unmasked_end to %end iter_args(%6) : !attn.frag<128x128xf32> -> !attn.frag<128x128xf32> attributes {masked} {
    ^bb0(%arg6: index, %arg7: !attn.frag<128x128xf32>):
      attn.copy_async %arg1[%batch, %arg6, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %9 = attn.mma %4, %1[%arg6] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %10 = attn.mask %9, %m_block, %arg6, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = -1 : i64} : !attn.frag<128x128xf32>
      %11 = attn.map %10, %5 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %cst = arith.constant 5.000000e-01 : f32
        %14 = arith.mulf %cst, %arg5 : f32
        %cst_0 = arith.constant 5.000000e-01 : f32
        %15 = arith.mulf %cst_0, %arg9 : f32
        %16 = arith.mulf %arg8, %15 : f32
        %17 = arith.addf %16, %14 : f32
        %18 = math.tanh %17 : f32
        %cst_1 = arith.constant 5.000000e-01 : f32
        %19 = arith.mulf %cst_1, %18 : f32
        %cst_2 = arith.constant 5.000000e-01 : f32
        %20 = arith.addf %cst_2, %19 : f32
        attn.yield %20 : f32
      }
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %12 = attn.convert %11 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %13 = attn.mma %12, %2[%arg6], %arg7 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %13 : !attn.frag<128x128xf32>
    }
    %8 = attn.kv_loop %unmasked_begin to %unmasked_end iter_args(%7) : !attn.frag<128x128xf32> -> !attn.frag<128x128xf32> {
    ^bb0(%arg6: index, %arg7: !attn.frag<128x128xf32>):
      attn.copy_async %arg1[%batch, %arg6, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %9 = attn.mma %4, %1[%arg6] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %10 = attn.map %9, %5 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %cst = arith.constant 5.000000e-01 : f32
        %13 = arith.mulf %cst, %arg5 : f32
        %cst_0 = arith.constant 5.000000e-01 : f32
        %14 = arith.mulf %cst_0, %arg9 : f32
        %15 = arith.mulf %arg8, %14 : f32
        %16 = arith.addf %15, %13 : f32
        %17 = math.tanh %16 : f32
        %cst_1 = arith.constant 5.000000e-01 : f32
        %18 = arith.mulf %cst_1, %17 : f32
        %cst_2 = arith.constant 5.000000e-01 : f32
        %19 = arith.addf %cst_2, %18 : f32
        attn.yield %19 : f32
      }
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %11 = attn.convert %10 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %12 = attn.mma %11, %2[%arg6], %arg7 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %12 : !attn.frag<128x128xf32>
    }
    attn.store %8, %3 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x128xf32>, memref<1x128x128xbf16, 3> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

