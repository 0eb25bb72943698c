// A score_mod that reads two learned tensors: ALiBi slopes (indexed by the
// head alone) and a relative-position bias table (indexed by the head and
// k - q, clamped into 16 buckets), each with a temperature scalar.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
!b = memref<?x?xf32, strided<[?, ?]>>
attn.kernel @learned arch(#attn.arch<sm_120>) attributes {arg_names = ["slopes", "table", "temperature"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %slopes: !s, %table: !b, %temp: f32):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%x: f32, %bi: index, %h: index, %i: index, %j: index):
    %sl = memref.load %slopes[%h] : !s
    %d = arith.subi %j, %i : index
    %c0 = arith.constant 0 : index
    %c15 = arith.constant 15 : index
    %lo = arith.maxsi %d, %c0 : index
    %bucket = arith.minsi %lo, %c15 : index
    %bias = memref.load %table[%h, %bucket] : !b
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %ali = arith.mulf %sl, %df : f32
    %xt = arith.mulf %x, %temp : f32
    %y0 = arith.addf %xt, %ali : f32
    %y = arith.addf %y0, %bias : f32
    attn.yield %y : f32
  }
}
