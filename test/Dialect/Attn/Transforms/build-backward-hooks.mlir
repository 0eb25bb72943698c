// RUN: flashtile-opt %s -split-input-file --attn-build-backward | FileCheck %s
// RUN: flashtile-opt %s -split-input-file --attn-build-backward=deterministic=true \
// RUN:   | FileCheck %s --check-prefix=DET

// A score_mod's backward. The forward's softmax saw s' = f(scale s), so P
// is exp2(s' log2(e) - LSE log2(e)), the exponent factor log2(e) alone, and
// dS = P (dP - D) f'(scale s) scale, f' derived from the hook's region:
// for 50 tanh(0.02 x), 50 (1 - tanh^2) 0.02. Where P = 0 the gradient is
// 0 whatever f' is.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @softcap_bwd_main
// CHECK:         %[[SCALE:.*]] = attn.softmax_scale
// CHECK:         %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:           %[[ST:.*]] = attn.mma %{{.*}}, %{{.*}}[%{{.*}}] {transpose_b}
// CHECK:           %[[P:.*]] = attn.map %[[ST]], %{{.*}}, %[[LOG2E]], {{.*}}, %[[SCALE]], %batch, %{{.*}} :
// CHECK:           ^bb0(%[[S:.*]]: f32, {{.*}}, %[[C:.*]]: f32, {{.*}}, %[[SC:.*]]: f32, {{.*}}):
// CHECK:             %[[SCALED:.*]] = arith.mulf %[[S]], %[[SC]] : f32
// CHECK:             %[[Y:.*]] = arith.mulf %[[SCALED]], %{{.*}} : f32
// CHECK:             %[[T:.*]] = math.tanh %[[Y]] : f32
// CHECK:             %[[MOD:.*]] = arith.mulf %[[T]], %{{.*}} : f32
// CHECK:             arith.mulf %[[MOD]], %[[C]] : f32
// CHECK:             math.exp2
// CHECK:           %[[DP:.*]] = attn.mma
// CHECK:           attn.map %[[P]], %[[DP]], %{{.*}}, %[[SCALE]], %[[ST]], %batch,
// CHECK:           ^bb0(%[[PP:.*]]: f32, %[[DPP:.*]]: f32, %[[DD:.*]]: f32, %[[SC2:.*]]: f32, %[[S2:.*]]: f32,
// CHECK:             %[[CENTRED:.*]] = arith.subf %[[DPP]], %[[DD]] : f32
// CHECK:             %[[SEED:.*]] = arith.mulf %[[PP]], %[[CENTRED]] : f32
// CHECK:             math.tanh
// CHECK:             %[[T2:.*]] = arith.mulf %[[TT:.*]], %[[TT]] : f32
// CHECK:             %[[ONE_MINUS:.*]] = arith.subf %{{.*}}, %[[T2]] : f32
// dS / scale = ∂L/∂(scale s): no factor of the scale per entry.
// CHECK:             %[[G:.*]] = arith.mulf %{{.*}}, %[[ONE_MINUS]] : f32
// CHECK:             %[[CHAIN:.*]] = arith.mulf %[[G]], %{{.*}} : f32
// CHECK-NOT:         arith.mulf %{{.*}}, %[[SC2]]
// CHECK:             %[[DROPPED:.*]] = arith.cmpf oeq, %[[PP]], %[[ZERO:.*]] : f32
// CHECK:             %[[DS:.*]] = arith.select %[[DROPPED]], %[[ZERO]], %[[CHAIN]] : f32
// CHECK:             attn.yield %[[DS]] : f32
// The scale is applied once, to dK before it is stored and to dQ where
// the convert kernel rounds it.
// CHECK:         %[[DK:.*]] = attn.map %{{.*}}#0, %[[SCALE]]
// CHECK:           arith.mulf
// CHECK:         attn.store_tile %[[DK]] -> %{{.*}}[%batch, %{{.*}}, %kv_head,
// CHECK-LABEL: attn.kernel @softcap_bwd_convert
// CHECK:         %[[ACC:.*]] = attn.load_tile
// CHECK:         %[[CSCALE:.*]] = attn.softmax_scale
// CHECK:         %[[DQ:.*]] = attn.map %[[ACC]], %[[CSCALE]]
// CHECK:         attn.store_tile %[[DQ]]
// CHECK:       attn.family @softcap_bwd

// The deterministic family's dQ kernel applies the hook before the mask (a
// softcap cannot bring a masked score back), then P, then dS with f'.
// DET-LABEL: attn.kernel @softcap_bwd_dq
// DET:         attn.kv_loop
// DET:           %[[S:.*]] = attn.mma
// DET:           %[[MOD:.*]] = attn.map %[[S]], {{.*}} {
// DET:             math.tanh
// DET:           attn.mask %[[MOD]]
// DET:           attn.map
// DET:             math.exp2
// DET:           attn.map {{.*}}, %[[S]], %batch, %head
// DET:             math.tanh
// DET:             arith.select
// DET:       attn.family @softcap_bwd kernels [@softcap_bwd_preprocess, @softcap_bwd_main, @softcap_bwd_dq]
attn.kernel @softcap arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.02 : f32
    %y = arith.mulf %x, %c : f32
    %z = math.tanh %y : f32
    %c50 = arith.constant 50.0 : f32
    %w = arith.mulf %z, %c50 : f32
    attn.yield %w : f32
  }
}

// -----

// A hook that reads the kernel's extra arguments (ALiBi's slopes, a run-time
// scalar): every kernel of the family takes them after its tensors, under
// the forward's names, and the maps read the kernel's own. The main kernel
// is transposed: the hook's q_idx is the column's query, kv_idx the row's
// key, and its head the step's.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @alibi_bwd_preprocess
// CHECK-SAME:    arg_names = ["slopes", "temperature"]
// CHECK:       ^bb0({{.*}}, %{{.*}}: memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>, %{{.*}}: memref<?xf32, strided<[?]>>, %{{.*}}: f32):
// CHECK-LABEL: attn.kernel @alibi_bwd_main
// CHECK-SAME:    arg_names = ["slopes", "temperature"]
// CHECK:       ^bb0({{.*}}, %[[SLOPES:.*]]: memref<?xf32, strided<[?]>>, %[[TEMP:.*]]: f32):
// CHECK:         attn.kv_loop
// CHECK:           attn.map %{{.*}}, %{{.*}}, %{{.*}}, %[[KV0:.*]], %[[Q0:.*]], {{.*}}, %batch, %[[H:.*]] :
// CHECK:           ^bb0(%{{[^:]*}}: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32, %[[KB:[^:]*]]: index, %[[QB:[^:]*]]: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: index, %{{[^:]*}}: f32, %{{[^:]*}}: index, %[[HH:[^:]*]]: index, %[[ROW:[^:]*]]: index, %[[COL:[^:]*]]: index):
// CHECK:             %[[KEY:.*]] = arith.addi %[[KB]], %[[ROW]] : index
// CHECK:             %[[QUERY:.*]] = arith.addi %[[QB]], %[[COL]] : index
// CHECK:             memref.load %[[SLOPES]][%[[HH]]]
// CHECK:             arith.subi %[[KEY]], %[[QUERY]] : index
// CHECK:             arith.mulf %{{.*}}, %[[TEMP]] : f32
// CHECK-LABEL: attn.kernel @alibi_bwd_convert
// CHECK-SAME:    arg_names = ["slopes", "temperature"]
attn.kernel @alibi arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes", "temperature"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %slopes: !s, %temp: f32):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %sl = memref.load %slopes[%h] : !s
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %bias = arith.mulf %sl, %df : f32
    %xt = arith.mulf %x, %temp : f32
    %y = arith.addf %xt, %bias : f32
    attn.yield %y : f32
  }
}

// -----

// Sinks: the forward's LSE counts the sink, so the kernels are the plain
// ones (P = exp(s - LSE) is right as it is); they take the sink's tensor
// as the forward's extra argument.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @sinks_bwd_main
// CHECK-SAME:    arg_names = ["sinks"]
// CHECK-NOT:     memref.load
// CHECK:       attn.family @sinks_bwd
attn.kernel @sinks arch(#attn.arch<sm_120>) attributes {arg_names = ["sinks"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %sinks: !s):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  sink {
  ^bb0(%b: index, %h: index):
    %v0 = memref.load %sinks[%h] : !s
    attn.yield %v0 : f32
  }
}

// -----

// A mask_mod with no key interval (document ids, an extra tensor): the
// main kernel refines its query tiles by a run-time block mask of the KV
// head's group (attn.block_ranges key_grid, the hook cloned in, reading the
// kernel's argument through attn.kernel_arg), evaluates the hook at every
// entry of its masked steps (P is 0 where it drops the key), and runs the
// tiles every head keeps whole in a second loop, without it. The dQ kernel
// refines its KV tiles by the forward's block mask, and sets dropped scores
// to -inf in its masked loops only.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!doc = memref<?x?xi32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @document_bwd_main
// CHECK-SAME:    arg_names = ["doc"]
// CHECK:       ^bb0({{.*}}, %[[DOC:.*]]: memref<?x?xi32, strided<[?, ?]>>):
// CHECK:         %[[LO:.*]], %[[ULO:.*]], %[[UHI:.*]], %[[HI:.*]] = attn.block_ranges %m_block, %batch, %kv_head, %seqlen_q within {{.*}} attributes {key_grid, tile_m = 64 : i64, tile_n = 64 : i64} {
// CHECK:           %[[ARG:.*]] = attn.kernel_arg 0
// CHECK-COUNT-2:   memref.load %[[ARG]]
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:           attn.map
// CHECK:             memref.load %[[DOC]]
// CHECK:             memref.load %[[DOC]]
// CHECK:             %[[SAME:.*]] = arith.cmpi eq
// CHECK:             %[[DROPS:.*]] = arith.xori %[[SAME]], %true
// CHECK:             arith.ori %{{.*}}, %[[DROPS]]
// CHECK:         attn.kv_loop
// CHECK-NOT:       memref.load %[[DOC]]
// CHECK-LABEL: attn.kernel @document_bwd_convert
// DET-LABEL: attn.kernel @document_bwd_main
// DET:         attn.block_ranges {{.*}} attributes {key_grid,
// DET-LABEL: attn.kernel @document_bwd_dq
// DET:         attn.block_ranges %m_block, %batch, %head, %seqlen_q within {{.*}} attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
// DET-COUNT-2:   memref.load
// DET:         attn.kv_loop {{.*}} attributes {masked}
// DET-COUNT-2:   memref.load
// DET:           arith.select %{{.*}}, %{{.*}}, %cst
// DET:         attn.kv_loop
// DET-NOT:       memref.load
// DET:         attn.kv_loop {{.*}} attributes {masked}
// DET:           memref.load
// DET:       attn.family @document_bwd
attn.kernel @document arch(#attn.arch<sm_120>) attributes {arg_names = ["doc"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %doc: !doc):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %di = memref.load %doc[%b, %i] : !doc
    %dj = memref.load %doc[%b, %j] : !doc
    %same = arith.cmpi eq, %di, %dj : i32
    attn.yield %same : i1
  }
}

// -----

// A mask_mod with a monotone exact key interval (a band of 256 keys): the
// main kernel visits only the query tiles with a row whose interval meets
// its KV tile (attn.query_range, bisected: a region, no tables) over the
// group's heads, and those every row of every head keeps whole (exact)
// run in a second loop, without the mask_mod; the dQ kernel refines its KV
// tiles as the forward does (an exact attn.key_range), so its middle loop
// runs without the mask_mod.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// CHECK-LABEL: attn.kernel @band_bwd_main
// CHECK:         %[[HQ:.*]] = attn.size "heads_q"
// CHECK:         %[[HKV:.*]] = attn.size "heads_kv"
// CHECK:         %[[GROUP:.*]] = arith.divui %[[HQ]], %[[HKV]]
// CHECK:         %[[B:.*]], %[[UB:.*]], %[[UE:.*]], %[[E:.*]] = attn.query_range %m_block, %batch, %head, %[[GROUP]], %seqlen_q, %seqlen_k within %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} attributes {exact, tile_m = 64 : i64, tile_n = 64 : i64} {
// CHECK:           arith.subi
// CHECK:           attn.yield
// CHECK:         arith.subi %[[E]], %[[B]]
// CHECK:         arith.subi %[[UE]], %[[UB]]
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:           arith.cmpi sge
// CHECK:         attn.kv_loop
// CHECK-NOT:       arith.cmpi sge
// CHECK-LABEL: attn.kernel @band_bwd_convert
// DET-LABEL: attn.kernel @band_bwd_dq
// DET:         attn.key_range {{.*}} attributes {exact, tile_m = 64 : i64, tile_n = 64 : i64}
// DET:         attn.kv_loop {{.*}} attributes {masked}
// DET:           arith.cmpi sge
// DET:         attn.kv_loop
// DET-NOT:       arith.cmpi sge
// DET:         attn.kv_loop {{.*}} attributes {masked}
attn.kernel @band arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 256 : index
    %lo = arith.subi %i, %c : index
    %a = arith.cmpi sge, %j, %lo : index
    %z = arith.cmpi sle, %j, %i : index
    %keep = arith.andi %a, %z : i1
    attn.yield %keep : i1
  }
}

// -----

// Packed sequences (flashtile.varlen's mask): each row's keys are its
// sequence's, read from tensors at q_idx, so the interval is not known to
// be monotone. The family gains the kv_first / kv_end workspaces, and as
// the interval is exact kv_unmasked_first / kv_unmasked_end: the preprocess
// kernel writes its query tile's KV tiles there (the forward's key_range,
// scanning its rows), and the main kernel's query_range reads them
// (tables, no region) instead of bisecting; the tiles every row keeps
// whole run in a second loop, without the mask_mod.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>
// CHECK-LABEL: attn.kernel @packed_bwd_preprocess
// CHECK-SAME:    #attn.tensor<"d", "workspace", "seqlen_q", "heads_q">, #attn.tensor<"kv_first", "workspace", "seqlen_q", "heads_q">, #attn.tensor<"kv_end", "workspace", "seqlen_q", "heads_q">, #attn.tensor<"kv_unmasked_first", "workspace", "seqlen_q", "heads_q">, #attn.tensor<"kv_unmasked_end", "workspace", "seqlen_q", "heads_q">
// CHECK:       ^bb0({{.*}}, %[[FIRST:[0-9a-z_]+]]: memref<?x?x?xf32>, %[[END:[0-9a-z_]+]]: memref<?x?x?xf32>, %[[UFIRST:[0-9a-z_]+]]: memref<?x?x?xf32>, %[[UEND:[0-9a-z_]+]]: memref<?x?x?xf32>, %{{[0-9a-z_]+}}: memref<?x?x?x64xf32,
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = attn.kv_bounds %m_block, %seqlen_q, %seqlen_k {tile_m = 64 : i64, tile_n = 64 : i64
// CHECK:         %[[B:.*]], %[[UB:.*]], %[[UE:.*]], %[[E:.*]], %{{.*}} = attn.key_range {{.*}} attributes {exact, scan_rows, tile_m = 64 : i64, tile_n = 64 : i64}
// CHECK:         %[[BF:.*]] = attn.map %{{.*}}, %[[B]] :
// CHECK:           arith.sitofp
// CHECK:         attn.store_tile %[[BF]] -> %[[FIRST]][
// CHECK:         %[[EF:.*]] = attn.map %{{.*}}, %[[E]] :
// CHECK:         attn.store_tile %[[EF]] -> %[[END]][
// CHECK:         %[[UBF:.*]] = attn.map %{{.*}}, %[[UB]] :
// CHECK:         attn.store_tile %[[UBF]] -> %[[UFIRST]][
// CHECK:         %[[UEF:.*]] = attn.map %{{.*}}, %[[UE]] :
// CHECK:         attn.store_tile %[[UEF]] -> %[[UEND]][
// CHECK-LABEL: attn.kernel @packed_bwd_main
// CHECK:       ^bb0({{.*}}, %[[FIRST:[0-9a-z_]+]]: memref<?x?x?xf32>, %[[END:[0-9a-z_]+]]: memref<?x?x?xf32>, %[[UFIRST:[0-9a-z_]+]]: memref<?x?x?xf32>, %[[UEND:[0-9a-z_]+]]: memref<?x?x?xf32>, %{{[0-9a-z_]+}}: memref<?x?x?x64xf32,
// CHECK:         attn.query_range {{.*}} tables %[[FIRST]], %[[END]], %[[UFIRST]], %[[UEND]] : memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32> attributes {exact, tile_m = 64 : i64, tile_n = 64 : i64}
// CHECK-NOT:       attn.yield
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:           memref.load
// CHECK:         attn.kv_loop
// CHECK-NOT:       memref.load
// DET-LABEL: attn.kernel @packed_bwd_dq
// DET:         attn.key_range {{.*}} attributes {exact, scan_rows, tile_m = 64 : i64, tile_n = 64 : i64}
attn.kernel @packed arch(#attn.arch<sm_120>) attributes {arg_names = ["seq", "start", "end"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %seq: !ids, %start: !ids, %end: !ids):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %s = memref.load %seq[%i] : !ids
    %si = arith.index_cast %s : i32 to index
    %a32 = memref.load %start[%si] : !ids
    %e32 = memref.load %end[%si] : !ids
    %a = arith.index_cast %a32 : i32 to index
    %e = arith.index_cast %e32 : i32 to index
    %ge = arith.cmpi sge, %j, %a : index
    %lt = arith.cmpi slt, %j, %e : index
    %keep = arith.andi %ge, %lt : i1
    attn.yield %keep : i1
  }
}

// -----

// A mask_mod with an inexact key interval (causal, and document ids): the
// main kernel's query_range bounds the query tiles (bisection, not exact:
// it certifies no tile whole), and the run-time block mask refines them.
// The block mask certifies the mask_mod, so its whole tiles are taken
// within the window's unmasked ones, not the query_range's (none).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!doc = memref<?x?xi32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @causal_document_bwd_main
// CHECK:         %[[B:[^,]+]], %{{[^,]+}}, %{{[^,]+}}, %[[E:[^ ]+]] = attn.query_range %m_block, %batch, %head, %{{.*}} attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
// CHECK:         attn.block_ranges %m_block, %batch, %kv_head, %seqlen_q within %[[B]], %{{[0-9]+}}, %{{[0-9]+}}, %[[E]] attributes {key_grid, tile_m = 64 : i64, tile_n = 64 : i64} {
// CHECK:         attn.kv_loop {{.*}} attributes {masked}
// CHECK:         attn.kv_loop
// CHECK-LABEL: attn.kernel @causal_document_bwd_convert
attn.kernel @causal_document arch(#attn.arch<sm_120>) attributes {arg_names = ["doc"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %doc: !doc):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %di = memref.load %doc[%b, %i] : !doc
    %dj = memref.load %doc[%b, %j] : !doc
    %same = arith.cmpi eq, %di, %dj : i32
    %causal = arith.cmpi sle, %j, %i : index
    %keep = arith.andi %causal, %same : i1
    attn.yield %keep : i1
  }
}
