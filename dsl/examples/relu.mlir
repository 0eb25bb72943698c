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
    %4 = attn.load_frag %0 : memref<1x128x128xbf16, 3> -> !attn.frag<128x128xbf16>
    %5 = attn.softmax_scale {default_value = 0.0883883461 : f32} : f32
    %6 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x128xf32>
    %7 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
    %8:2 = attn.kv_loop %unmasked_end to %end iter_args(%6, %7) : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32>, !attn.frag<128xf32> attributes {masked} {
    ^bb0(%arg5: index, %arg6: !attn.frag<128x128xf32>, %arg7: !attn.frag<128xf32>):
      attn.copy_async %arg1[%batch, %arg5, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %11 = attn.mma %4, %1[%arg5] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %12 = attn.mask %11, %m_block, %arg5, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = -1 : i64} : !attn.frag<128x128xf32>
      %13 = attn.map %12 : !attn.frag<128x128xf32> -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: index, %arg10: index):
        %cst = arith.constant 0xFF800000 : f32
        %19 = arith.cmpf oeq, %arg8, %cst : f32
        %cst_0 = arith.constant 1.000000e+00 : f32
        %cst_1 = arith.constant 0.000000e+00 : f32
        %20 = arith.select %19, %cst_1, %cst_0 : f32
        attn.yield %20 : f32
      }
      %14 = attn.reduce_rows %13 {kind = "sum"} : !attn.frag<128x128xf32> -> !attn.frag<128xf32>
      %15 = attn.map %arg7, %14 : !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index):
        %19 = arith.addf %arg8, %arg9 : f32
        attn.yield %19 : f32
      }
      %16 = attn.map %12, %5 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %19 = arith.mulf %arg8, %arg9 : f32
        %cst = arith.constant 0.000000e+00 : f32
        %20 = arith.maximumf %19, %cst : f32
        attn.yield %20 : f32
      }
      attn.copy_async %arg2[%batch, %arg5, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %17 = attn.convert %16 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %18 = attn.mma %17, %2[%arg5], %arg6 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %18, %15 : !attn.frag<128x128xf32>, !attn.frag<128xf32>
    }
    %9:2 = attn.kv_loop %unmasked_begin to %unmasked_end iter_args(%8#0, %8#1) : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32>, !attn.frag<128xf32> {
    ^bb0(%arg5: index, %arg6: !attn.frag<128x128xf32>, %arg7: !attn.frag<128xf32>):
      attn.copy_async %arg1[%batch, %arg5, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %11 = attn.mma %4, %1[%arg5] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %12 = attn.map %arg7 : !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg8: f32, %arg9: index):
        %cst = arith.constant 1.280000e+02 : f32
        %16 = arith.addf %arg8, %cst : f32
        attn.yield %16 : f32
      }
      %13 = attn.map %11, %5 : !attn.frag<128x128xf32>, f32 -> !attn.frag<128x128xf32> {
      ^bb0(%arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
        %16 = arith.mulf %arg8, %arg9 : f32
        %cst = arith.constant 0.000000e+00 : f32
        %17 = arith.maximumf %16, %cst : f32
        attn.yield %17 : f32
      }
      attn.copy_async %arg2[%batch, %arg5, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %14 = attn.convert %13 : !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      %15 = attn.mma %14, %2[%arg5], %arg6 : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %15, %12 : !attn.frag<128x128xf32>, !attn.frag<128xf32>
    }
    %10 = attn.map %9#0, %9#1 : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
    ^bb0(%arg5: f32, %arg6: f32, %arg7: index, %arg8: index):
      %11 = arith.divf %arg5, %arg6 : f32
      %cst = arith.constant 0.000000e+00 : f32
      %12 = arith.cmpf oeq, %arg6, %cst : f32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %13 = arith.select %12, %cst_0, %11 : f32
      attn.yield %13 : f32
    }
    attn.store %10, %3 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x128xf32>, memref<1x128x128xbf16, 3> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

