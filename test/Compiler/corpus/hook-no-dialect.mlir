!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @hook_scf arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi slt, %j, %i : index
    %y = scf.if %c -> f32 {
      scf.yield %s : f32
    } else {
      scf.yield %s : f32
    }
    attn.yield %y : f32
  }
}
