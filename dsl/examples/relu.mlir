module {
  attn.kernel @relu_attention arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true>) {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>):
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
    %8 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
    %9:2 = attn.kv_loop %unmasked_end to %end iter_args(%7, %8) : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32>, !attn.frag<128xf32> attributes {masked} {
    ^bb0(%arg5: index, %arg6: !attn.frag<128x128xf32>, %arg7: !attn.frag<128xf32>):
      attn.copy_async %arg2[%batch, %arg5, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %12 = attn.mma_qk %5, %1[%arg5] : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %13 = attn.mask %12, %m_block, %arg5, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = -1 : i64} : !attn.frag<128x128xf32>
      %14 = attn.map %13 : !attn.frag<128x128xf32> -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: index, %arg10: index):
        %cst = arith.constant 0xFF800000 : f32
        %21 = arith.cmpf oeq, %arg8, %cst : f32
        %cst_1 = arith.constant 1.000000e+00 : f32
        %cst_2 = arith.constant 0.000000e+00 : f32
        %22 = arith.select %21, %cst_2, %cst_1 : f32
        attn.yield %22 : f32
      }
      %15 = attn.reduce_rows %14 {kind = "sum"} : !attn.frag<128x128xf32> -> !attn.frag<128xf32>
      %16 = attn.map %arg7, %15 : !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index):
        %21 = arith.addf %arg8, %arg9 : f32
        attn.yield %21 : f32
      }
      %17 = attn.map %13, %6 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %21 = arith.mulf %arg8, %arg9 : f32
        %cst = arith.constant 0.000000e+00 : f32
        %22 = arith.maximumf %21, %cst : f32
        attn.yield %22 : f32
      }
      %c1_0 = arith.constant 1 : index
      %18 = arith.subi %arg5, %c1_0 : index
      attn.copy_async %arg1[%batch, %18, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %19 = attn.convert %17 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %20 = attn.mma_pv %19, %2[%arg5], %arg6 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32>
      attn.yield %20, %16 : !attn.frag<128x128xf32>, !attn.frag<128xf32>
    }
    %10:2 = attn.kv_loop %unmasked_begin to %unmasked_end iter_args(%9#0, %9#1) : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32>, !attn.frag<128xf32> {
    ^bb0(%arg5: index, %arg6: !attn.frag<128x128xf32>, %arg7: !attn.frag<128xf32>):
      attn.copy_async %arg2[%batch, %arg5, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %12 = attn.mma_qk %5, %1[%arg5] : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %13 = attn.map %arg7 : !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg8: f32, %arg9: index):
        %cst = arith.constant 1.280000e+02 : f32
        %18 = arith.addf %arg8, %cst : f32
        attn.yield %18 : f32
      }
      %14 = attn.map %12, %6 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %18 = arith.mulf %arg8, %arg9 : f32
        %cst = arith.constant 0.000000e+00 : f32
        %19 = arith.maximumf %18, %cst : f32
        attn.yield %19 : f32
      }
      %c1_0 = arith.constant 1 : index
      %15 = arith.subi %arg5, %c1_0 : index
      attn.copy_async %arg1[%batch, %15, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %16 = attn.convert %14 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %17 = attn.mma_pv %16, %2[%arg5], %arg6 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32>
      attn.yield %17, %13 : !attn.frag<128x128xf32>, !attn.frag<128xf32>
    }
    %11 = attn.map %10#0, %10#1 : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
    ^bb0(%arg5: f32, %arg6: f32, %arg7: index, %arg8: index):
      %12 = arith.divf %arg5, %arg6 : f32
      %cst = arith.constant 0.000000e+00 : f32
      %13 = arith.cmpf oeq, %arg6, %cst : f32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %14 = arith.select %13, %cst_0, %12 : f32
      attn.yield %14 : f32
    }
    attn.store %11, %3 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x128xf32>, memref<1x128x128xbf16, 3> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

