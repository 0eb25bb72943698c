module {
  attn.kernel @relative_bias arch(#attn.arch<sm_120>) attributes {arg_names = ["bias"]} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: memref<?x?xf32, strided<[?, ?]>>):
    attn.attention %arg0, %arg1, %arg2 -> %arg3, %arg4 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32> score_mod {
    ^bb0(%arg6: f32, %arg7: index, %arg8: index, %arg9: index, %arg10: index):
      %0 = arith.subi %arg10, %arg9 : index
      %c0 = arith.constant 0 : index
      %1 = arith.cmpi sgt, %0, %c0 : index
      %c0_0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %2 = arith.select %1, %c16, %c0_0 : index
      %c0_1 = arith.constant 0 : index
      %3 = arith.subi %c0_1, %0 : index
      %4 = arith.maxsi %0, %3 : index
      %c8 = arith.constant 8 : index
      %5 = arith.maxsi %4, %c8 : index
      %6 = arith.index_cast %5 : index to i32
      %7 = arith.sitofp %6 : i32 to f32
      %cst = arith.constant 8.000000e+00 : f32
      %8 = arith.divf %7, %cst : f32
      %9 = math.log %8 : f32
      %cst_2 = arith.constant 2.5257287 : f32
      %10 = arith.divf %9, %cst_2 : f32
      %cst_3 = arith.constant 8.000000e+00 : f32
      %11 = arith.mulf %10, %cst_3 : f32
      %12 = arith.fptosi %11 : f32 to i32
      %13 = arith.index_cast %12 : i32 to index
      %c8_4 = arith.constant 8 : index
      %14 = arith.addi %c8_4, %13 : index
      %c15 = arith.constant 15 : index
      %15 = arith.minsi %14, %c15 : index
      %c8_5 = arith.constant 8 : index
      %16 = arith.cmpi slt, %4, %c8_5 : index
      %17 = arith.select %16, %4, %15 : index
      %18 = arith.addi %2, %17 : index
      %19 = memref.load %arg5[%arg8, %18] : memref<?x?xf32, strided<[?, ?]>>
      %20 = arith.addf %arg6, %19 : f32
      attn.yield %20 : f32
    }
  }
}

