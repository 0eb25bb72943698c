// Attention sinks read from a per-head tensor: the sink hook of gpt-oss.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!s = memref<?xf32, strided<[?]>>
attn.kernel @sinks arch(#attn.arch<sm_120>) attributes {arg_names = ["sinks"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %sinks: !s):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !t, !t, !t -> !t, !lse
  sink {
  ^bb0(%b: index, %h: index):
    %v0 = memref.load %sinks[%h] : !s
    attn.yield %v0 : f32
  }
}
