// RUN: flashtile-opt %s -split-input-file -verify-diagnostics

// Shape, dtype and layout mismatches are errors at the user's op.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_shapes arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %b = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  // expected-error @below {{operand 1 is '!attn.frag<64x64xf32>' but an earlier operand is 64x32}}
  %c = attn.map %a, %b : !attn.frag<64x32xf32>, !attn.frag<64x64xf32> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %y: f32, %row: index, %col: index):
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_rows arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %r = attn.splat {value = 1.0 : f32} : !attn.frag<128xf32>
  // expected-error @below {{operand 1 has 128 rows but an earlier operand has 64}}
  %c = attn.map %a, %r : !attn.frag<64x32xf32>, !attn.frag<128xf32> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %y: f32, %row: index, %col: index):
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_dtype arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xbf16>
  // expected-error @below {{operand 0 is '!attn.frag<64x32xbf16>'; convert to f32 first (fragments of f16/bf16 are mma operands)}}
  %c = attn.map %a : !attn.frag<64x32xbf16> -> !attn.frag<64x32xf32> {
  ^bb0(%x: bf16, %row: index, %col: index):
    %y = arith.extf %x : bf16 to f32
    attn.yield %y : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_body_arity arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{body must take 3 arguments: one per operand, then the row and the column (index); it takes 1}}
  %c = attn.map %a : !attn.frag<64x32xf32> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32):
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_result_shape arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{result must be '!attn.frag<64x32xf32>', got '!attn.frag<64xf32>'}}
  %c = attn.map %a : !attn.frag<64x32xf32> -> !attn.frag<64xf32> {
  ^bb0(%x: f32, %row: index):
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_outside_value arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %two = arith.constant 2.0 : f32
  %c = attn.map %a : !attn.frag<64x32xf32> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %row: index, %col: index):
    // expected-error @below {{uses a value defined outside the map hook}}
    %y = arith.mulf %x, %two : f32
    attn.yield %y : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @reduce_kind arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{kind must be "max" or "sum", got "min"}}
  %r = attn.reduce_rows %a {kind = "min"} : !attn.frag<64x32xf32> -> !attn.frag<64xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @reduce_kv_warps arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 16, tile_n = 64, stages = 2, warps = 4, q_in_regs = true, kv_warps = 4, pack_gqa = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<16x16xf32>
  // expected-error @below {{needs whole rows in one warp; the kernel's config splits each row over 4 KV warps}}
  %r = attn.reduce_rows %a {kind = "max"} : !attn.frag<16x16xf32> -> !attn.frag<16xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @convert_columns arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x24xf32>
  // expected-error @below {{source has 24 columns; an mma A operand needs a multiple of 16}}
  %p = attn.convert %a : !attn.frag<64x24xf32> -> !attn.frag<64x24xbf16>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @convert_type arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{result must be f16 or bf16, got 'f32'}}
  %p = attn.convert %a : !attn.frag<64x32xf32> -> !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_columns arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x128xbf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x128xf32>
  // expected-error @below {{acc has 128 columns but O's head dim 64 pads to 64}}
  attn.store %acc, %os -> %o[%b, %m, %h], %lse : !attn.frag<64x128xf32>, memref<1x64x128xbf16, 3> -> !t, !lse
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_stage_dtype arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %os = attn.smem_alloc {name = "O"} : memref<1x64x64xf16, 3>
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %acc = attn.splat {value = 0.0 : f32} : !attn.frag<64x64xf32>
  // expected-error @below {{staging buffer holds 'f16' but O is 'bf16'}}
  attn.store %acc, %os -> %o[%b, %m, %h], %lse : !attn.frag<64x64xf32>, memref<1x64x64xf16, 3> -> !t, !lse
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @head_range arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %qs = attn.smem_alloc {name = "Q"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x16x64xbf16, 3>
  %j = arith.constant 0 : index
  // expected-error @below {{k range [8, 64) must be a non-empty slice of K = 64 in whole 16-column mma steps}}
  %s = attn.mma %qs, %ks[%j] {k_begin = 8, transpose_b} : memref<1x64x64xbf16, 3>, memref<1x16x64xbf16, 3> -> !attn.frag<64x16xf32>
}

// -----

// An n range is whole pairs of n-tiles (ldmatrix loads B's two at a time).
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @column_range_pairs arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %j = arith.constant 0 : index
  // expected-error @below {{n range [8, 64) must be a non-empty slice of N = 64 in whole pairs of 8-column mma n-tiles}}
  %dq = attn.mma %ds, %ks[%j] {n_begin = 8, transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x56xf32>
}

// -----

// The result holds the n range's columns only.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @column_range_result arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %j = arith.constant 0 : index
  // expected-error @below {{result must be '!attn.frag<64x32xf32>', got '!attn.frag<64x64xf32>'}}
  %dq = attn.mma %ds, %ks[%j] {n_begin = 32, transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x64xf32>
}

// -----

// An n range past N.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @column_range_end arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
  %ks = attn.smem_alloc {name = "K"} : memref<1x64x64xbf16, 3>
  %j = arith.constant 0 : index
  // expected-error @below {{n range [32, 96) must be a non-empty slice of N = 64}}
  %dq = attn.mma %ds, %ks[%j] {n_begin = 32, n_end = 96, transpose_a} : memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3> -> !attn.frag<64x64xf32>
}

// -----

// A 'cols' vector broadcasts along the rows of a tile with as many columns.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_cols_width arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %a = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %c = attn.splat {value = 1.0 : f32} : !attn.frag<64xf32, cols>
  // expected-error @below {{operand 1 is a 'cols' vector of 64 values, which broadcasts along the rows of a rank-2 operand with as many columns; the rank-2 operands have 32 columns}}
  %r = attn.map %a, %c : !attn.frag<64x32xf32>, !attn.frag<64xf32, cols> -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %y: f32, %row: index, %col: index):
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @map_cols_alone arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c = attn.splat {value = 1.0 : f32} : !attn.frag<64xf32, cols>
  // expected-error @below {{needs at least one fragment operand with rows (a 'cols' vector broadcasts along a rank-2 operand's rows)}}
  %r = attn.map %c : !attn.frag<64xf32, cols> -> !attn.frag<64xf32, cols> {
  ^bb0(%y: f32, %row: index, %col: index):
    attn.yield %y : f32
  }
}

// -----

// A 'cols' vector is an f32 fragment whose size is a multiple of 8.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @cols_size arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{a 'cols' fragment holds f32 values of a multiple of 8 columns (one mma tile's width), got 12 x 'f32'}}
  %c = attn.splat {value = 1.0 : f32} : !attn.frag<12xf32, cols>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_frag_shape arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x32xbf16, 3>
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  // expected-error @below {{stores a 64 x 64 tile into a buffer of 64 x 32}}
  attn.store_frag %s -> %ds : !attn.frag<64x64xf32> -> memref<1x64x32xbf16, 3>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_frag_slots arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<2x64x64xbf16, 3>
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  // expected-error @below {{destination must have one slot, got 2}}
  attn.store_frag %s -> %ds : !attn.frag<64x64xf32> -> memref<2x64x64xbf16, 3>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_frag_f32 arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x64xf32, 3>
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xf32>
  // expected-error @below {{rounds into f16 or bf16 buffers, got 'f32'}}
  attn.store_frag %s -> %ds : !attn.frag<64x64xf32> -> memref<1x64x64xf32, 3>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @store_frag_a arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %ds = attn.smem_alloc {name = "dS"} : memref<1x64x64xbf16, 3>
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x64xbf16, a>
  // expected-error @below {{stores an f32 accumulator, got '!attn.frag<64x64xbf16>'}}
  attn.store_frag %s -> %ds : !attn.frag<64x64xbf16, a> -> memref<1x64x64xbf16, 3>
}

// -----

// A vector is loaded from a (batch, heads, rows) tensor.
!t = memref<?x?x?x64xf32, strided<[?, ?, ?, 1]>>
attn.kernel @load_vector_rank arch(#attn.arch<sm_120>) attributes {tensors = [#attn.tensor<"x", "in", "seqlen_q", "heads_q">]} {
^bb0(%x: !t):
  %c0 = arith.constant 0 : index
  // expected-error @below {{a vector of a (batch, heads, rows) tensor, got}}
  %y = attn.load_tile %x[%c0, %c0, %c0, %c0] : !t -> !attn.frag<64xf32, cols>
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!g = memref<?xf32, strided<[?]>>
attn.kernel @for_each_into_an_input arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %slopes: !g):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  attn.for_each %s, %h : !attn.frag<64x32xf32>, index {
  ^bb0(%x: f32, %hh: index, %row: index, %col: index):
    // expected-error @below {{adds into a memref that is not one of the kernel's extra tensors of role 'accumulate'}}
    %old = memref.atomic_rmw addf %x, %slopes[%hh] : (f32, !g) -> f32
    attn.yield
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!g = memref<?xf32, strided<[?]>>
attn.kernel @for_each_reads_the_old_value arch(#attn.arch<sm_120>) attributes {arg_names = ["grad"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %grad: !g):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  attn.for_each %s, %h : !attn.frag<64x32xf32>, index {
  ^bb0(%x: f32, %hh: index, %row: index, %col: index):
    // expected-error @below {{result (the old value) must be unused: other elements add to it concurrently}}
    %old = memref.atomic_rmw addf %x, %grad[%hh] : (f32, !g) -> f32
    %twice = arith.addf %old, %old : f32
    attn.yield
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @for_each_yields arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{body must end in an attn.yield of nothing}}
  attn.for_each %s : !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %row: index, %col: index):
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!g = memref<?xf32, strided<[?]>>
attn.kernel @map_adds arch(#attn.arch<sm_120>) attributes {arg_names = ["grad"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %grad: !g):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %r = attn.map %s, %h : !attn.frag<64x32xf32>, index -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %hh: index, %row: index, %col: index):
    // expected-error @below {{is not supported in a map hook}}
    %old = memref.atomic_rmw addf %x, %grad[%hh] : (f32, !g) -> f32
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!g = memref<?xf32, strided<[?]>>
attn.kernel @for_each_rows arch(#attn.arch<sm_120>) attributes {arg_names = ["grad"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %grad: !g):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %r = attn.splat {value = 1.0 : f32} : !attn.frag<64xf32>
  // expected-error @below {{needs a rank-2 fragment operand: a rows vector's values are held four times over, so their adds would count four times}}
  attn.for_each %r, %h : !attn.frag<64xf32>, index {
  ^bb0(%x: f32, %hh: index, %row: index):
    %old = memref.atomic_rmw addf %x, %grad[%hh] : (f32, !g) -> f32
    attn.yield
  }
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!g = memref<?xf32, strided<[?]>>
attn.kernel @map_reads_an_accumulated_tensor arch(#attn.arch<sm_120>) attributes {arg_names = ["grad"], arg_roles = ["accumulate"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %grad: !g):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %s = attn.splat {value = 1.0 : f32} : !attn.frag<64x32xf32>
  %r = attn.map %s, %h : !attn.frag<64x32xf32>, index -> !attn.frag<64x32xf32> {
  ^bb0(%x: f32, %hh: index, %row: index, %col: index):
    // expected-error @below {{reads an extra tensor of role 'accumulate', which the kernel adds to; hooks read only its inputs}}
    %g0 = memref.load %grad[%hh] : !g
    %y = arith.addf %x, %g0 : f32
    attn.yield %y : f32
  }
}
