// The causal attention backward, bf16, d = 64, one query head per KV head,
// as a family of tile programs (FlashAttention-2's algorithm), for
// tools/gpu/check_mma.py. The family's arguments are the forward's Q, K,
// V, O and LSE (natural log), dO, and the gradients dQ, dK and dV; d
// (D = rowsum(dO * O)) and dq_accum (dQ in f32) are workspaces the plan
// zero-fills per launch.
//   1. @bwd_causal_preprocess (query tiles): D into d.
//   2. @bwd_causal_main (grid = "keys"): block (n, h, b) holds key tile n
//      of K and V in shared memory and walks the query tiles i that see it
//      (causal, bottom-right aligned: key k is seen by the queries q with
//      k <= q + seqlen_k - seqlen_q). Everything is transposed, key rows
//      first, so that dK and dV accumulate in registers:
//        S^T  = K Q_i^T                      (attn.mma, A from shared)
//        P^T  = exp(scale S^T - LSE_i)       (LSE_i a 'cols' vector)
//        dP^T = V dO_i^T
//        dS^T = P^T (dP^T - D_i) scale
//        dV  += P^T dO_i,  dK += dS^T Q_i    (A from registers)
//        dQ_i += dS K                        (dS^T through shared memory,
//                                             read back with transpose_a;
//                                             f32 atomics into dq_accum)
//      Masked entries (past either sequence, above the diagonal, a row
//      whose LSE is -inf: no key) have P = 0, so they add nothing.
//   3. @bwd_causal_convert (query tiles): dq_accum rounded into dQ.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!rows = memref<?x?x?xf32>
!acc = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
!f = !attn.frag<64x64xf32>
!v = !attn.frag<64xf32, cols>
#tensors = [#attn.tensor<"q", "in", "seqlen_q", "heads_q">,
            #attn.tensor<"k", "in", "seqlen_k", "heads_kv">,
            #attn.tensor<"v", "in", "seqlen_k", "heads_kv">,
            #attn.tensor<"o", "in", "seqlen_q", "heads_q">,
            #attn.tensor<"lse", "in", "seqlen_q", "heads_q">,
            #attn.tensor<"do", "in", "seqlen_q", "heads_q">,
            #attn.tensor<"d", "workspace", "seqlen_q", "heads_q">,
            #attn.tensor<"dq_accum", "workspace", "seqlen_q", "heads_q">,
            #attn.tensor<"dq", "out", "seqlen_q", "heads_q">,
            #attn.tensor<"dk", "out", "seqlen_k", "heads_kv">,
            #attn.tensor<"dv", "out", "seqlen_k", "heads_kv">]
#config = #attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>

attn.kernel @bwd_causal_preprocess arch(#attn.arch<sm_120>) config(#config) attributes {tensors = #tensors} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %do: !t, %d: !rows, %dqa: !acc, %dq: !t, %dk: !t, %dv: !t):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %m, %c64 : index
  %ot = attn.load_tile %o[%b, %row, %h, %c0] : !t -> !f
  %dot = attn.load_tile %do[%b, %row, %h, %c0] : !t -> !f
  %prod = attn.map %dot, %ot : !f, !f -> !f {
  ^bb0(%x: f32, %y: f32, %i: index, %j: index):
    %z = arith.mulf %x, %y : f32
    attn.yield %z : f32
  }
  %sum = attn.reduce_rows %prod {kind = "sum"} : !f -> !attn.frag<64xf32>
  attn.store_tile %sum -> %d[%b, %h, %row] : !attn.frag<64xf32> -> !rows
}

attn.kernel @bwd_causal_main arch(#attn.arch<sm_120>) config(#config) attributes {grid = "keys", tensors = #tensors} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %do: !t, %d: !rows, %dqa: !acc, %dq: !t, %dk: !t, %dv: !t):
  %n, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %vs = attn.smem_alloc {name = "V"} : memref<1x64x64xbf16, 3>
  %qs = attn.smem_alloc {name = "Q"} : memref<2x64x64xbf16, 3>
  %dos = attn.smem_alloc {name = "dO"} : memref<2x64x64xbf16, 3>
  %dss = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
  %c0 = arith.constant 0 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  attn.copy_async %k[%b, %n, %hkv] -> %ks : !t -> memref<1x64x64xbf16, 3>
  attn.copy_async %v[%b, %n, %hkv] -> %vs : !t -> memref<1x64x64xbf16, 3>
  %kv0 = arith.muli %n, %c64 : index
  %sq63 = arith.addi %sq, %c63 : index
  %tiles = arith.divui %sq63, %c64 : index
  // The first query that sees key kv0 is kv0 - (seqlen_k - seqlen_q).
  %shift = arith.subi %sk, %sq : index
  %first = arith.subi %kv0, %shift : index
  %first0 = arith.maxsi %first, %c0 : index
  %lo0 = arith.divui %first0, %c64 : index
  %lo = arith.minsi %lo0, %tiles : index
  %scale = attn.softmax_scale {default_value = 0.125 : f32} : f32
  %log2e = arith.constant 1.44269504 : f32
  %scale_log2 = arith.mulf %scale, %log2e : f32
  %zero = attn.splat {value = 0.0 : f32} : !f
  %dkf, %dvf = attn.kv_loop %lo to %tiles iter_args(%zero, %zero) : !f, !f -> !f, !f attributes {masked} {
  ^bb0(%i: index, %dka: !f, %dva: !f):
    attn.copy_async %q[%b, %i, %h] -> %qs : !t -> memref<2x64x64xbf16, 3>
    attn.copy_async %do[%b, %i, %h] -> %dos : !t -> memref<2x64x64xbf16, 3>
    %q0 = arith.muli %i, %c64 : index
    %st = attn.mma %ks, %qs[%i] {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3> -> !f
    %lsev = attn.load_tile %lse[%b, %h, %q0] : !lse -> !v
    %pt = attn.map %st, %lsev, %scale_log2, %kv0, %q0, %sq, %sk, %shift : !f, !v, f32, index, index, index, index, index -> !f {
    ^bb0(%x: f32, %l: f32, %c: f32, %kb: index, %qb: index, %nq: index, %nk: index, %sh: index, %row: index, %col: index):
      %key = arith.addi %kb, %row : index
      %qi = arith.addi %qb, %col : index
      %last = arith.addi %qi, %sh : index
      %past_k = arith.cmpi sge, %key, %nk : index
      %past_q = arith.cmpi sge, %qi, %nq : index
      %above = arith.cmpi sgt, %key, %last : index
      %ninf = arith.constant 0xFF800000 : f32
      %empty = arith.cmpf oeq, %l, %ninf : f32
      %m1 = arith.ori %past_k, %past_q : i1
      %m2 = arith.ori %m1, %above : i1
      %m3 = arith.ori %m2, %empty : i1
      %l2e = arith.constant 1.44269504 : f32
      %ll = arith.mulf %l, %l2e : f32
      %xs = arith.mulf %x, %c : f32
      %e = arith.subf %xs, %ll : f32
      %p = math.exp2 %e : f32
      %z = arith.constant 0.0 : f32
      %r = arith.select %m3, %z, %p : f32
      attn.yield %r : f32
    }
    %dpt = attn.mma %vs, %dos[%i] {transpose_b} : memref<1x64x64xbf16, 3>, memref<2x64x64xbf16, 3> -> !f
    %dvec = attn.load_tile %d[%b, %h, %q0] : !rows -> !v
    %dst = attn.map %pt, %dpt, %dvec, %scale : !f, !f, !v, f32 -> !f {
    ^bb0(%p: f32, %dp: f32, %dd: f32, %s: f32, %row: index, %col: index):
      %a = arith.subf %dp, %dd : f32
      %w = arith.mulf %p, %a : f32
      %r = arith.mulf %w, %s : f32
      attn.yield %r : f32
    }
    %ptb = attn.convert %pt : !f -> !attn.frag<64x64xbf16>
    %dva2 = attn.mma %ptb, %dos[%i], %dva : !attn.frag<64x64xbf16>, memref<2x64x64xbf16, 3>, !f -> !f
    %dstb = attn.convert %dst : !f -> !attn.frag<64x64xbf16>
    %dka2 = attn.mma %dstb, %qs[%i], %dka : !attn.frag<64x64xbf16>, memref<2x64x64xbf16, 3>, !f -> !f
    attn.store_frag %dst -> %dss : !f -> memref<1x64x64xbf16, 3>
    %dqt = attn.mma %dss, %ks[%n] {transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !f
    attn.store_tile %dqt -> %dqa[%b, %q0, %h, %c0] {accumulate} : !f -> !acc
    attn.yield %dka2, %dva2 : !f, !f
  }
  attn.store_tile %dkf -> %dk[%b, %kv0, %hkv, %c0] : !f -> !t
  attn.store_tile %dvf -> %dv[%b, %kv0, %hkv, %c0] : !f -> !t
}

attn.kernel @bwd_causal_convert arch(#attn.arch<sm_120>) config(#config) attributes {tensors = #tensors} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %do: !t, %d: !rows, %dqa: !acc, %dq: !t, %dk: !t, %dv: !t):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %row = arith.muli %m, %c64 : index
  %x = attn.load_tile %dqa[%b, %row, %h, %c0] : !acc -> !f
  attn.store_tile %x -> %dq[%b, %row, %h, %c0] : !f -> !t
}
attn.family @bwd_causal kernels [@bwd_causal_preprocess, @bwd_causal_main, @bwd_causal_convert]
