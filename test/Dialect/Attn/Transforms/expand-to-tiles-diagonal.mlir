// RUN: flashtile-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles))' | FileCheck %s

// The diagonal-term analysis (Analysis/DiagonalTerm.h): a costly f32 value
// of the score_mod that depends on q and k only through k - q is marked
// attn.diagonal_table, to be read from a table its own kernel fills.

// A T5-style bucket: log of |k - q|, then a table read. The read is the
// costliest such value the score uses: marked, in every KV loop.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bias = memref<?x?xf32, strided<[?, ?]>>
// CHECK-LABEL: attn.kernel @bucket
// CHECK:         attn.modify_scores
// CHECK:           math.log
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] {attn.diagonal_table}
// CHECK-NEXT:      arith.addf
// CHECK:         attn.modify_scores
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] {attn.diagonal_table}
attn.kernel @bucket arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["bias"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %bias: !bias):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %a = math.absi %d : index
    %c1 = arith.constant 1 : index
    %a1 = arith.addi %a, %c1 : index
    %ai = arith.index_cast %a1 : index to i32
    %af = arith.sitofp %ai : i32 to f32
    %l = math.log %af : f32
    %li = arith.fptosi %l : f32 to i32
    %bucket = arith.index_cast %li : i32 to index
    %bv = memref.load %bias[%h, %bucket] : !bias
    %y = arith.addf %x, %bv : f32
    attn.yield %y : f32
  }
}

// -----

// Shifts cancel however the positions are offset: (k + 3) - (q + 1) is
// invariant, (q - k) too; k + q, q alone and k - 2q are not.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!v = memref<?xf32, strided<[?]>>
// CHECK-LABEL: attn.kernel @shifted
// CHECK:         memref.load %{{.*}}[%{{.*}}] {attn.diagonal_table}
// CHECK-LABEL: attn.kernel @reversed
// CHECK:         memref.load %{{.*}}[%{{.*}}] {attn.diagonal_table}
// CHECK-LABEL: attn.kernel @sum
// CHECK-NOT:     attn.diagonal_table
// CHECK-LABEL: attn.kernel @row
// CHECK-NOT:     attn.diagonal_table
// CHECK-LABEL: attn.kernel @twice
// CHECK-NOT:     attn.diagonal_table
// CHECK-LABEL: attn.kernel @score
// CHECK-NOT:     attn.diagonal_table
// CHECK-LABEL: attn.kernel @cheap
// CHECK-NOT:     attn.diagonal_table
attn.kernel @shifted arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %i1 = arith.addi %i, %c1 : index
    %j3 = arith.addi %c3, %j : index
    %d = arith.subi %j3, %i1 : index
    %t = memref.load %table[%d] : !v
    %y = arith.addf %x, %t : f32
    attn.yield %y : f32
  }
}
attn.kernel @reversed arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %i, %j : index
    %t = memref.load %table[%d] : !v
    %y = arith.mulf %x, %t : f32
    attn.yield %y : f32
  }
}
attn.kernel @sum arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.addi %i, %j : index
    %t = memref.load %table[%d] : !v
    %y = arith.addf %x, %t : f32
    attn.yield %y : f32
  }
}
attn.kernel @row arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = memref.load %table[%i] : !v
    %y = arith.addf %x, %t : f32
    attn.yield %y : f32
  }
}
attn.kernel @twice arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %j, %i : index
    %e = arith.subi %d, %i : index
    %t = memref.load %table[%e] : !v
    %y = arith.addf %x, %t : f32
    attn.yield %y : f32
  }
}

// A term of the score itself is not a diagonal term.
attn.kernel @score arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %l = math.log %x : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %y = arith.addf %l, %df : f32
    attn.yield %y : f32
  }
}

// ALiBi's slope[h] * (k - q) is cheap: it stays inline.
attn.kernel @cheap arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 32, stages = 1, warps = 4, q_in_regs = false>) attributes {arg_names = ["table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !v):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %sl = memref.load %table[%h] : !v
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %bias = arith.mulf %sl, %df : f32
    %y = arith.addf %x, %bias : f32
    attn.yield %y : f32
  }
}
