module {
  attn.kernel @chunked arch(#attn.arch<sm_120>) {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>):
    attn.attention %arg0, %arg1, %arg2 -> %arg3, %arg4 {causal} : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32> mask_mod {
    ^bb0(%arg5: index, %arg6: index, %arg7: index, %arg8: index):
      %c1024 = arith.constant 1024 : index
      %0 = arith.divsi %arg8, %c1024 : index
      %c1024_0 = arith.constant 1024 : index
      %1 = arith.divsi %arg7, %c1024_0 : index
      %2 = arith.cmpi eq, %1, %0 : index
      attn.yield %2 : i1
    }
  }
}

