// Every op the hook contract admits (attn::isSupportedHookOp), in one
// score_mod and one mask_mod; test/Compiler/hook-all-ops.test compiles it to
// PTX.
!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!tab = memref<?x?xf16, strided<[?, 1]>>
!ids = memref<?xi64, strided<[?]>>
attn.kernel @all_ops arch(#attn.arch<sm_120>) attributes {arg_names = ["tab", "ids", "w", "n"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %tab: !tab, %ids: !ids, %w: f32, %n: i64):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %f2 = arith.constant 2.0 : f32
    %a0 = arith.addi %i, %j : index
    %a1 = arith.subi %a0, %c1 : index
    %a2 = arith.muli %a1, %c3 : index
    %a3 = arith.divsi %a2, %c3 : index
    %a4 = arith.divui %a3, %c3 : index
    %a5 = arith.remsi %a4, %c3 : index
    %a6 = arith.remui %a5, %c3 : index
    %a7 = arith.floordivsi %a6, %c3 : index
    %a8 = arith.ceildivsi %a7, %c3 : index
    %a9 = arith.maxsi %a8, %c1 : index
    %a10 = arith.minsi %a9, %c3 : index
    %a11 = arith.maxui %a10, %c1 : index
    %a12 = arith.minui %a11, %c3 : index
    %a13 = arith.andi %a12, %c3 : index
    %a14 = arith.ori %a13, %c1 : index
    %a15 = arith.xori %a14, %c1 : index
    %a16 = arith.shli %a15, %c1 : index
    %a17 = arith.shrsi %a16, %c1 : index
    %a18 = arith.shrui %a17, %c1 : index
    %e = memref.load %tab[%h, %a18] : !tab
    %ef = arith.extf %e : f16 to f32
    %id = memref.load %ids[%j] : !ids
    %idx = arith.index_cast %id : i64 to index
    %idu = arith.index_castui %idx : index to i64
    %idt = arith.trunci %idu : i64 to i32
    %ide = arith.extsi %idt : i32 to i64
    %idz = arith.extui %idt : i32 to i64
    %ids2 = arith.addi %ide, %idz : i64
    %ids3 = arith.addi %ids2, %id : i64
    %nf = arith.sitofp %ids3 : i64 to f32
    %nu = arith.uitofp %n : i64 to f32
    %x0 = arith.addf %s, %ef : f32
    %x1 = arith.subf %x0, %nf : f32
    %x2 = arith.mulf %x1, %w : f32
    %x3 = arith.divf %x2, %f2 : f32
    %x4 = arith.negf %x3 : f32
    %x5 = arith.maximumf %x4, %nu : f32
    %x6 = arith.minimumf %x5, %f2 : f32
    %x7 = arith.maxnumf %x6, %x0 : f32
    %x8 = arith.minnumf %x7, %x1 : f32
    %m0 = math.tanh %x8 : f32
    %m1 = math.exp %m0 : f32
    %m2 = math.exp2 %m1 : f32
    %m3 = math.log %m2 : f32
    %m4 = math.log2 %m3 : f32
    %m5 = math.sqrt %m4 : f32
    %m6 = math.rsqrt %m5 : f32
    %m7 = math.absf %m6 : f32
    %m8 = math.powf %m7, %f2 : f32
    %m9 = math.erf %m8 : f32
    %m10 = math.fma %m9, %f2, %x0 : f32
    %m11 = math.floor %m10 : f32
    %m12a = math.ceil %m10 : f32
    %m12 = arith.addf %m11, %m12a : f32
    %m13 = math.sin %m12 : f32
    %m14 = math.cos %m13 : f32
    %h16 = arith.truncf %m14 : f32 to f16
    %h32 = arith.extf %h16 : f16 to f32
    %fi = arith.fptosi %h32 : f32 to i32
    %fu = arith.fptoui %h32 : f32 to i32
    %fsum = arith.addi %fi, %fu : i32
    %fabs = math.absi %fsum : i32
    %ff = arith.sitofp %fabs : i32 to f32
    %lt = arith.cmpf olt, %ff, %x0 : f32
    %r = arith.select %lt, %ff, %x0 : f32
    attn.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %sq = attn.size "seqlen_q" : index
    %sk = attn.size "seqlen_k" : index
    %hq = attn.size "heads_q" : index
    %hk = attn.size "heads_kv" : index
    %bs = attn.size "batch" : index
    %t = arith.constant true
    %c0 = arith.cmpi slt, %j, %sk : index
    %c1 = arith.cmpi slt, %i, %sq : index
    %c2 = arith.cmpi ult, %h, %hq : index
    %c3 = arith.cmpi sge, %hk, %bs : index
    %a = arith.andi %c0, %c1 : i1
    %or = arith.ori %a, %c2 : i1
    %x = arith.xori %or, %c3 : i1
    %y = arith.xori %x, %t : i1
    attn.yield %y : i1
  }
}
