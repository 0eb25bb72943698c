module {
  attn.kernel @softcap arch(#attn.arch<sm_120>) {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>):
    attn.attention %arg0, %arg1, %arg2 -> %arg3, %arg4 {causal} : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32> score_mod {
    ^bb0(%arg5: f32, %arg6: index, %arg7: index, %arg8: index, %arg9: index):
      %cst = arith.constant 5.000000e+01 : f32
      %0 = arith.divf %arg5, %cst : f32
      %1 = math.tanh %0 : f32
      %cst_0 = arith.constant 5.000000e+01 : f32
      %2 = arith.mulf %cst_0, %1 : f32
      attn.yield %2 : f32
    }
  }
}

