!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @hook_q arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c0 = arith.constant 0 : index
    %x = memref.load %q[%b, %i, %h, %c0] : !t
    %z = arith.constant 0.0 : bf16
    %keep = arith.cmpf ogt, %x, %z : bf16
    attn.yield %keep : i1
  }
}
