module {
  attn.kernel @differential_attention arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 32, stages = 1, warps = 8, q_in_regs = false>) attributes {arg_names = ["lam"]} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: f32):
    %0 = attn.smem_alloc {name = "Q"} : memref<1x128x128xbf16, 3>
    %1 = attn.smem_alloc {name = "K"} : memref<1x32x128xbf16, 3>
    %2 = attn.smem_alloc {name = "V"} : memref<1x32x128xbf16, 3>
    %3 = attn.smem_alloc {name = "O"} : memref<1x128x128xbf16, 3>
    %m_block, %head, %kv_head, %batch, %seqlen_q, %seqlen_k = attn.block_context %arg0, %arg1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
    %begin, %unmasked_begin, %unmasked_end, %end = attn.kv_bounds %m_block, %seqlen_q, %seqlen_k {tile_m = 128 : i64, tile_n = 32 : i64, window_left = -1 : i64, window_right = -1 : i64}
    attn.copy_async %arg0[%batch, %m_block, %head] -> %0 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
    %4 = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
    %5 = attn.splat {value = 0xFF800000 : f32} : !attn.frag<128xf32>
    %6 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
    %7 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x128xf32>
    %8 = attn.splat {value = 0xFF800000 : f32} : !attn.frag<128xf32>
    %9 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
    %10 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x128xf32>
    %11:6 = attn.kv_loop %unmasked_end to %end iter_args(%5, %6, %7, %8, %9, %10) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> attributes {masked} {
    ^bb0(%arg6: index, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128xf32>, %arg9: !attn.frag<128x128xf32>, %arg10: !attn.frag<128xf32>, %arg11: !attn.frag<128xf32>, %arg12: !attn.frag<128x128xf32>):
      attn.copy_async %arg1[%batch, %arg6, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x32x128xbf16, 3>
      %14 = attn.mma %0, %1[%arg6] {k_end = 64 : i64, transpose_b} : memref<1x128x128xbf16, 3>, memref<1x32x128xbf16, 3> -> !attn.frag<128x32xf32>
      %15 = attn.mma %0, %1[%arg6] {k_begin = 64 : i64, k_end = 128 : i64, transpose_b} : memref<1x128x128xbf16, 3>, memref<1x32x128xbf16, 3> -> !attn.frag<128x32xf32>
      %16 = attn.mask %14, %m_block, %arg6, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = -1 : i64} : !attn.frag<128x32xf32>
      %17 = attn.mask %15, %m_block, %arg6, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = -1 : i64} : !attn.frag<128x32xf32>
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x32x128xbf16, 3>
      %18 = attn.reduce_rows %16 {kind = "max"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %19 = attn.map %arg7, %18 : !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index):
        %36 = arith.maximumf %arg13, %arg14 : f32
        attn.yield %36 : f32
      }
      %20 = attn.map %16, %19, %4 : !attn.frag<128x32xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128x32xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index, %arg17: index):
        %36 = arith.subf %arg13, %arg14 : f32
        %37 = arith.mulf %36, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %38 = arith.mulf %37, %cst : f32
        %39 = math.exp2 %38 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %40 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 0.000000e+00 : f32
        %41 = arith.select %40, %cst_1, %39 : f32
        attn.yield %41 : f32
      }
      %21 = attn.map %arg7, %19, %4 : !attn.frag<128xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %36 = arith.subf %arg13, %arg14 : f32
        %37 = arith.mulf %36, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %38 = arith.mulf %37, %cst : f32
        %39 = math.exp2 %38 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %40 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 1.000000e+00 : f32
        %41 = arith.select %40, %cst_1, %39 : f32
        attn.yield %41 : f32
      }
      %22 = attn.reduce_rows %20 {kind = "sum"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %23 = attn.map %arg8, %21, %22 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %36 = arith.mulf %arg13, %arg14 : f32
        %37 = arith.addf %36, %arg15 : f32
        attn.yield %37 : f32
      }
      %24 = attn.map %arg9, %21 : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index, %arg16: index):
        %36 = arith.mulf %arg13, %arg14 : f32
        attn.yield %36 : f32
      }
      %25 = attn.convert %20 : !attn.frag<128x32xf32> -> !attn.frag<128x32xbf16>
      %26 = attn.mma %25, %2[%arg6], %24 : !attn.frag<128x32xbf16>, memref<1x32x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      %27 = attn.reduce_rows %17 {kind = "max"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %28 = attn.map %arg10, %27 : !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index):
        %36 = arith.maximumf %arg13, %arg14 : f32
        attn.yield %36 : f32
      }
      %29 = attn.map %17, %28, %4 : !attn.frag<128x32xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128x32xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index, %arg17: index):
        %36 = arith.subf %arg13, %arg14 : f32
        %37 = arith.mulf %36, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %38 = arith.mulf %37, %cst : f32
        %39 = math.exp2 %38 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %40 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 0.000000e+00 : f32
        %41 = arith.select %40, %cst_1, %39 : f32
        attn.yield %41 : f32
      }
      %30 = attn.map %arg10, %28, %4 : !attn.frag<128xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %36 = arith.subf %arg13, %arg14 : f32
        %37 = arith.mulf %36, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %38 = arith.mulf %37, %cst : f32
        %39 = math.exp2 %38 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %40 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 1.000000e+00 : f32
        %41 = arith.select %40, %cst_1, %39 : f32
        attn.yield %41 : f32
      }
      %31 = attn.reduce_rows %29 {kind = "sum"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %32 = attn.map %arg11, %30, %31 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %36 = arith.mulf %arg13, %arg14 : f32
        %37 = arith.addf %36, %arg15 : f32
        attn.yield %37 : f32
      }
      %33 = attn.map %arg12, %30 : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index, %arg16: index):
        %36 = arith.mulf %arg13, %arg14 : f32
        attn.yield %36 : f32
      }
      %34 = attn.convert %29 : !attn.frag<128x32xf32> -> !attn.frag<128x32xbf16>
      %35 = attn.mma %34, %2[%arg6], %33 : !attn.frag<128x32xbf16>, memref<1x32x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %19, %23, %26, %28, %32, %35 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
    }
    %12:6 = attn.kv_loop %unmasked_begin to %unmasked_end iter_args(%11#0, %11#1, %11#2, %11#3, %11#4, %11#5) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> {
    ^bb0(%arg6: index, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128xf32>, %arg9: !attn.frag<128x128xf32>, %arg10: !attn.frag<128xf32>, %arg11: !attn.frag<128xf32>, %arg12: !attn.frag<128x128xf32>):
      attn.copy_async %arg1[%batch, %arg6, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x32x128xbf16, 3>
      %14 = attn.mma %0, %1[%arg6] {k_end = 64 : i64, transpose_b} : memref<1x128x128xbf16, 3>, memref<1x32x128xbf16, 3> -> !attn.frag<128x32xf32>
      %15 = attn.mma %0, %1[%arg6] {k_begin = 64 : i64, k_end = 128 : i64, transpose_b} : memref<1x128x128xbf16, 3>, memref<1x32x128xbf16, 3> -> !attn.frag<128x32xf32>
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x32x128xbf16, 3>
      %16 = attn.reduce_rows %14 {kind = "max"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %17 = attn.map %arg7, %16 : !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index):
        %34 = arith.maximumf %arg13, %arg14 : f32
        attn.yield %34 : f32
      }
      %18 = attn.map %14, %17, %4 : !attn.frag<128x32xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128x32xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index, %arg17: index):
        %34 = arith.subf %arg13, %arg14 : f32
        %35 = arith.mulf %34, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %36 = arith.mulf %35, %cst : f32
        %37 = math.exp2 %36 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %38 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 0.000000e+00 : f32
        %39 = arith.select %38, %cst_1, %37 : f32
        attn.yield %39 : f32
      }
      %19 = attn.map %arg7, %17, %4 : !attn.frag<128xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %34 = arith.subf %arg13, %arg14 : f32
        %35 = arith.mulf %34, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %36 = arith.mulf %35, %cst : f32
        %37 = math.exp2 %36 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %38 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 1.000000e+00 : f32
        %39 = arith.select %38, %cst_1, %37 : f32
        attn.yield %39 : f32
      }
      %20 = attn.reduce_rows %18 {kind = "sum"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %21 = attn.map %arg8, %19, %20 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %34 = arith.mulf %arg13, %arg14 : f32
        %35 = arith.addf %34, %arg15 : f32
        attn.yield %35 : f32
      }
      %22 = attn.map %arg9, %19 : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index, %arg16: index):
        %34 = arith.mulf %arg13, %arg14 : f32
        attn.yield %34 : f32
      }
      %23 = attn.convert %18 : !attn.frag<128x32xf32> -> !attn.frag<128x32xbf16>
      %24 = attn.mma %23, %2[%arg6], %22 : !attn.frag<128x32xbf16>, memref<1x32x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      %25 = attn.reduce_rows %15 {kind = "max"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %26 = attn.map %arg10, %25 : !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index):
        %34 = arith.maximumf %arg13, %arg14 : f32
        attn.yield %34 : f32
      }
      %27 = attn.map %15, %26, %4 : !attn.frag<128x32xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128x32xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index, %arg17: index):
        %34 = arith.subf %arg13, %arg14 : f32
        %35 = arith.mulf %34, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %36 = arith.mulf %35, %cst : f32
        %37 = math.exp2 %36 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %38 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 0.000000e+00 : f32
        %39 = arith.select %38, %cst_1, %37 : f32
        attn.yield %39 : f32
      }
      %28 = attn.map %arg10, %26, %4 : !attn.frag<128xf32>, !attn.frag<128xf32>, f32 -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %34 = arith.subf %arg13, %arg14 : f32
        %35 = arith.mulf %34, %arg15 : f32
        %cst = arith.constant 1.44269502 : f32
        %36 = arith.mulf %35, %cst : f32
        %37 = math.exp2 %36 : f32
        %cst_0 = arith.constant 0xFF800000 : f32
        %38 = arith.cmpf oeq, %arg14, %cst_0 : f32
        %cst_1 = arith.constant 1.000000e+00 : f32
        %39 = arith.select %38, %cst_1, %37 : f32
        attn.yield %39 : f32
      }
      %29 = attn.reduce_rows %27 {kind = "sum"} : !attn.frag<128x32xf32> -> !attn.frag<128xf32>
      %30 = attn.map %arg11, %28, %29 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32> -> !attn.frag<128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: f32, %arg16: index):
        %34 = arith.mulf %arg13, %arg14 : f32
        %35 = arith.addf %34, %arg15 : f32
        attn.yield %35 : f32
      }
      %31 = attn.map %arg12, %28 : !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
      ^bb0(%arg13: f32, %arg14: f32, %arg15: index, %arg16: index):
        %34 = arith.mulf %arg13, %arg14 : f32
        attn.yield %34 : f32
      }
      %32 = attn.convert %27 : !attn.frag<128x32xf32> -> !attn.frag<128x32xbf16>
      %33 = attn.mma %32, %2[%arg6], %31 : !attn.frag<128x32xbf16>, memref<1x32x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %17, %21, %24, %26, %30, %33 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
    }
    %13 = attn.map %12#2, %12#1, %12#5, %12#4 : !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>, !attn.frag<128xf32> -> !attn.frag<128x128xf32> {
    ^bb0(%arg6: f32, %arg7: f32, %arg8: f32, %arg9: f32, %arg10: index, %arg11: index):
      %14 = arith.divf %arg6, %arg7 : f32
      %cst = arith.constant 0.000000e+00 : f32
      %15 = arith.cmpf oeq, %arg7, %cst : f32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %16 = arith.select %15, %cst_0, %14 : f32
      %17 = arith.divf %arg8, %arg9 : f32
      %cst_1 = arith.constant 0.000000e+00 : f32
      %18 = arith.cmpf oeq, %arg9, %cst_1 : f32
      %cst_2 = arith.constant 0.000000e+00 : f32
      %19 = arith.select %18, %cst_2, %17 : f32
      %20 = arith.mulf %arg5, %19 : f32
      %21 = arith.subf %16, %20 : f32
      attn.yield %21 : f32
    }
    attn.store %13, %3 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x128xf32>, memref<1x128x128xbf16, 3> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

