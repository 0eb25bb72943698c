!t = memref<?x?x?x64xf16, strided<[?, ?, ?, 1]>>
%14 = attn.modify_scores %13, %a, %b, %c, %d, %e, %f, %g : !attn.frag<64x128xf32> score_mod {
}
%15 = attn.modify_scores %13, %a, %b, %c, %d, %e, %f, %g : !attn.frag<64x128xf32> score_mod {
  %18 = arith.index_cast %arg14 : index to i32
}
%16 = attn.modify_scores %13, %a, %b, %c, %d, %e, %f, %g : !attn.frag<64x128xf32> score_mod {
^bb0(%arg11: f32, %arg12: index, %arg13: index, %arg14: index, %arg15: index):
^bb0(%arg16: index):
}
