// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s
// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s --check-prefix=MAIN

// A score_mod with a diagonal term (attn.diagonal_table: a log bucket of
// k - q, then a per-head table read; Analysis/DiagonalTerm.h). Its kernel
// `<name>_diagonal_table` fills the workspace (parameter 29, after the extra
// arguments' 24-28) with the term at each k - q, one row of
// ceil(seqlen_q / 64) * 64 + ceil(seqlen_k / 16) * 16 entries per head;
// the attention kernel reads it instead of computing the term.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bias = memref<?x?xf32, strided<[?, ?]>>

// The table kernel: one thread per entry, heads on the grid's y axis; the
// term at q = 0, k = entry - (padded seqlen_q - 1); the store only for
// entries inside the row.
// CHECK-LABEL: llvm.func @rel_diagonal_table(
// CHECK-SAME:    %[[TABLE:[^ :]+]]: !llvm.ptr<1>, %{{[^ :]+}}: i32)
// CHECK-SAME:    attn.workspace_params = {diagonal_table = 29 : i64}
// CHECK-SAME:    nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK-DAG:     nvvm.read.ptx.sreg.tid.x
// CHECK-DAG:     nvvm.read.ptx.sreg.ctaid.y
// CHECK:         llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK:         llvm.load {{.*}} invariant
// CHECK:         llvm.getelementptr %[[TABLE]]
// CHECK:         llvm.cond_br
// CHECK:         llvm.store {{.*}} : f32, !llvm.ptr<1>

// The attention kernel: no logarithm and no clamped bias read left. Each
// score reads its table entry at row + 4 * (kv_idx - q_idx): every score
// of a thread shares the row address (one k - q base) and differs by an
// immediate; then the score (times its scale) plus the entry.
// MAIN-LABEL: llvm.func @rel(
// MAIN-SAME:    attn.workspace_params = {diagonal_table = 29 : i64}
// MAIN-NOT:     lg2
// MAIN-NOT:     llvm.intr.smin
// MAIN:         %[[ORIGIN:.*]] = llvm.getelementptr %arg29[
// MAIN:         %[[ROW:.*]] = llvm.getelementptr %[[ORIGIN]][
// MAIN:         %[[AT:.*]] = llvm.getelementptr %[[ROW]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// MAIN-NEXT:    %[[ENTRY:.*]] = llvm.load %[[AT]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> f32
// MAIN-NEXT:    llvm.fmul
// MAIN-NEXT:    llvm.fadd %{{.*}}, %[[ENTRY]]
// MAIN-NEXT:    %[[FOUR:.*]] = llvm.mlir.constant(4 : i64) : i64
// MAIN-NEXT:    llvm.getelementptr %[[ROW]][%[[FOUR]]]
// MAIN-NOT:     lg2
attn.kernel @rel arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 16, stages = 1, warps = 4, q_in_regs = true>) attributes {smem_bytes = 16384 : i64, arg_names = ["bias"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %bias: !bias):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %j = arith.constant 3 : index
  %s = attn.splat {value = 1.000000e+00 : f32} : !attn.frag<64x16xf32>
  %scale = attn.softmax_scale {default_value = 1.250000e-01 : f32} : f32
  %r = attn.modify_scores %s, %m, %j, %b, %h, %sq, %sk, %scale : !attn.frag<64x16xf32>
  score_mod {
  ^bb0(%x: f32, %bi: index, %hi: index, %qi: index, %ki: index):
    %tab = attn.kernel_arg 0 : !bias
    %d = arith.subi %ki, %qi : index
    %a = math.absi %d : index
    %c1 = arith.constant 1 : index
    %a1 = arith.addi %a, %c1 : index
    %ai = arith.index_cast %a1 : index to i32
    %af = arith.sitofp %ai : i32 to f32
    %l = math.log %af : f32
    %li = arith.fptosi %l : f32 to i32
    %bucket = arith.index_cast %li : i32 to index
    %bb = memref.load %tab[%hi, %bucket] {attn.diagonal_table} : !bias
    %z = arith.addf %x, %bb : f32
    attn.yield %z : f32
  }
}
