module {
  attn.kernel @document_mask arch(#attn.arch<sm_120>) attributes {arg_names = ["doc_ids"]} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: memref<?x?xi32, strided<[?, ?]>>):
    attn.attention %arg0, %arg1, %arg2 -> %arg3, %arg4 {causal} : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32> mask_mod {
    ^bb0(%arg6: index, %arg7: index, %arg8: index, %arg9: index):
      %0 = memref.load %arg5[%arg6, %arg9] : memref<?x?xi32, strided<[?, ?]>>
      %1 = arith.index_cast %0 : i32 to index
      %2 = memref.load %arg5[%arg6, %arg8] : memref<?x?xi32, strided<[?, ?]>>
      %3 = arith.index_cast %2 : i32 to index
      %4 = arith.cmpi eq, %3, %1 : index
      attn.yield %4 : i1
    }
  }
}

