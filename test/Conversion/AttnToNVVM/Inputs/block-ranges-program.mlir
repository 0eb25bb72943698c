module {
  attn.kernel @document_mask arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = true>) attributes {arg_names = ["doc_ids"], problem = #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 0.0883883461 : f32>, smem_bytes = 65536 : i64} {
  ^bb0(%arg0: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg1: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg2: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg3: memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, %arg4: memref<?x?x?xf32>, %arg5: memref<?x?xi32, strided<[?, ?]>>):
    %0 = attn.smem_alloc {name = "Q", offset = 0 : i64} : memref<1x128x128xbf16, 3>
    %1 = attn.smem_alloc {name = "K", offset = 32768 : i64} : memref<1x128x128xbf16, 3>
    %2 = attn.smem_alloc {name = "V", offset = 0 : i64} : memref<1x128x128xbf16, 3>
    %3 = attn.smem_alloc {name = "O", offset = 0 : i64} : memref<1x128x128xbf16, 3>
    %m_block, %head, %kv_head, %batch, %seqlen_q, %seqlen_k = attn.block_context %arg0, %arg1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
    %begin, %unmasked_begin, %unmasked_end, %end = attn.kv_bounds %m_block, %seqlen_q, %seqlen_k {tile_m = 128 : i64, tile_n = 128 : i64, window_left = -1 : i64, window_right = 0 : i64}
    %begin_0, %unmasked_begin_1, %unmasked_end_2, %end_3 = attn.block_ranges %m_block, %batch, %head, %seqlen_q within %begin, %unmasked_begin, %unmasked_end, %end attributes {tile_m = 128 : i64, tile_n = 128 : i64} {
    ^bb0(%arg6: index, %arg7: index, %arg8: index, %arg9: index):
      %14 = attn.kernel_arg 0 : memref<?x?xi32, strided<[?, ?]>>
      %15 = memref.load %14[%arg6, %arg9] : memref<?x?xi32, strided<[?, ?]>>
      %16 = arith.index_cast %15 : i32 to index
      %17 = memref.load %14[%arg6, %arg8] : memref<?x?xi32, strided<[?, ?]>>
      %18 = arith.index_cast %17 : i32 to index
      %19 = arith.cmpi eq, %18, %16 : index
      attn.yield %19 : i1
    }
    attn.copy_async %arg0[%batch, %m_block, %head] -> %0 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
    %c1 = arith.constant 1 : index
    %4 = arith.subi %end_3, %c1 : index
    attn.copy_async %arg1[%batch, %4, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
    attn.async_wait {pending = 1 : i64}
    attn.barrier
    %5 = attn.load_frag %0 : memref<1x128x128xbf16, 3> -> !attn.frag<128x128xbf16>
    %6 = attn.softmax_scale {default_value = 0.0883883461 : f32} : f32
    %cst = arith.constant 1.44269502 : f32
    %7 = arith.mulf %6, %cst : f32
    %8 = attn.splat {value = 0xFF800000 : f32} : !attn.frag<128xf32>
    %9 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128xf32>
    %10 = attn.splat {value = 0.000000e+00 : f32} : !attn.frag<128x128xf32>
    %11:3 = attn.kv_loop %unmasked_end_2 to %end_3 iter_args(%8, %9, %10) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> attributes {masked} {
    ^bb0(%arg6: index, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128xf32>, %arg9: !attn.frag<128x128xf32>):
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %14 = attn.mma %5, %1[%arg6] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %15 = attn.modify_scores %14, %m_block, %arg6, %batch, %head, %seqlen_q, %seqlen_k, %6 : !attn.frag<128x128xf32> mask_mod {
      ^bb0(%arg10: index, %arg11: index, %arg12: index, %arg13: index):
        %19 = attn.kernel_arg 0 : memref<?x?xi32, strided<[?, ?]>>
        %20 = memref.load %19[%arg10, %arg13] : memref<?x?xi32, strided<[?, ?]>>
        %21 = arith.index_cast %20 : i32 to index
        %22 = memref.load %19[%arg10, %arg12] : memref<?x?xi32, strided<[?, ?]>>
        %23 = arith.index_cast %22 : i32 to index
        %24 = arith.cmpi eq, %23, %21 : index
        attn.yield %24 : i1
      }
      %16 = attn.mask %15, %m_block, %arg6, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = 0 : i64} : !attn.frag<128x128xf32>
      %p, %new_row_max, %new_row_sum, %new_acc = attn.online_softmax %16, %arg7, %arg8, %arg9, %7 : !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      %c1_4 = arith.constant 1 : index
      %17 = arith.subi %arg6, %c1_4 : index
      attn.copy_async %arg1[%batch, %17, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %18 = attn.mma %p, %2[%arg6], %new_acc : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %new_row_max, %new_row_sum, %18 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
    }
    %12:3 = attn.kv_loop %unmasked_begin_1 to %unmasked_end_2 iter_args(%11#0, %11#1, %11#2) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> {
    ^bb0(%arg6: index, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128xf32>, %arg9: !attn.frag<128x128xf32>):
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %14 = attn.mma %5, %1[%arg6] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %p, %new_row_max, %new_row_sum, %new_acc = attn.online_softmax %14, %arg7, %arg8, %arg9, %7 : !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      %c1_4 = arith.constant 1 : index
      %15 = arith.subi %arg6, %c1_4 : index
      attn.copy_async %arg1[%batch, %15, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %16 = attn.mma %p, %2[%arg6], %new_acc : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %new_row_max, %new_row_sum, %16 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
    }
    %13:3 = attn.kv_loop %begin_0 to %unmasked_begin_1 iter_args(%12#0, %12#1, %12#2) : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> attributes {masked} {
    ^bb0(%arg6: index, %arg7: !attn.frag<128xf32>, %arg8: !attn.frag<128xf32>, %arg9: !attn.frag<128x128xf32>):
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      attn.copy_async %arg2[%batch, %arg6, %kv_head] -> %2 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %14 = attn.mma %5, %1[%arg6] {transpose_b} : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3> -> !attn.frag<128x128xf32>
      %15 = attn.modify_scores %14, %m_block, %arg6, %batch, %head, %seqlen_q, %seqlen_k, %6 : !attn.frag<128x128xf32> mask_mod {
      ^bb0(%arg10: index, %arg11: index, %arg12: index, %arg13: index):
        %19 = attn.kernel_arg 0 : memref<?x?xi32, strided<[?, ?]>>
        %20 = memref.load %19[%arg10, %arg13] : memref<?x?xi32, strided<[?, ?]>>
        %21 = arith.index_cast %20 : i32 to index
        %22 = memref.load %19[%arg10, %arg12] : memref<?x?xi32, strided<[?, ?]>>
        %23 = arith.index_cast %22 : i32 to index
        %24 = arith.cmpi eq, %23, %21 : index
        attn.yield %24 : i1
      }
      %16 = attn.mask %15, %m_block, %arg6, %seqlen_q, %seqlen_k {window_left = -1 : i64, window_right = 0 : i64} : !attn.frag<128x128xf32>
      %p, %new_row_max, %new_row_sum, %new_acc = attn.online_softmax %16, %arg7, %arg8, %arg9, %7 : !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32> -> !attn.frag<128x128xbf16>
      attn.async_wait {pending = 0 : i64}
      attn.barrier
      %c1_4 = arith.constant 1 : index
      %17 = arith.subi %arg6, %c1_4 : index
      attn.copy_async %arg1[%batch, %17, %kv_head] -> %1 : memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>> -> memref<1x128x128xbf16, 3>
      %18 = attn.mma %p, %2[%arg6], %new_acc : !attn.frag<128x128xbf16>, memref<1x128x128xbf16, 3>, !attn.frag<128x128xf32> -> !attn.frag<128x128xf32>
      attn.yield %new_row_max, %new_row_sum, %18 : !attn.frag<128xf32>, !attn.frag<128xf32>, !attn.frag<128x128xf32>
    }
    attn.async_wait {pending = 0 : i64}
    attn.barrier
    attn.epilogue %13#2, %13#0, %13#1, %3, %6 -> %arg3[%batch, %m_block, %head], %arg4 : !attn.frag<128x128xf32>, !attn.frag<128xf32>, !attn.frag<128xf32>, memref<1x128x128xbf16, 3> -> memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x?x?xf32>
  }
}

