module {
  attn.kernel @prefix_lm arch(#attn.arch<sm_120>) attributes {arg_names = ["prefix_len"]} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: i32):
    attn.attention %arg0, %arg1, %arg2 -> %arg3, %arg4 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32> mask_mod {
    ^bb0(%arg6: index, %arg7: index, %arg8: index, %arg9: index):
      %0 = arith.cmpi sle, %arg9, %arg8 : index
      %1 = arith.index_cast %arg5 : i32 to index
      %2 = arith.cmpi slt, %arg9, %1 : index
      %3 = arith.ori %0, %2 : i1
      attn.yield %3 : i1
    }
  }
}

