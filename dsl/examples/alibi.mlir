module {
  attn.kernel @alibi arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes"]} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: memref<?xf32, strided<[?]>>):
    attn.attention %arg0, %arg1, %arg2 -> %arg3, %arg4 {causal} : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32> score_mod {
    ^bb0(%arg6: f32, %arg7: index, %arg8: index, %arg9: index, %arg10: index):
      %0 = arith.subi %arg10, %arg9 : index
      %1 = arith.index_cast %0 : index to i32
      %2 = arith.sitofp %1 : i32 to f32
      %3 = memref.load %arg5[%arg8] : memref<?xf32, strided<[?]>>
      %4 = arith.mulf %3, %2 : f32
      %5 = arith.addf %arg6, %4 : f32
      attn.yield %5 : f32
    }
  }
}

