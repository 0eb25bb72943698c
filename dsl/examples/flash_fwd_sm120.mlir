// The example SM120 kernel: FlashAttention forward, bf16, head_dim 128,
// causal, for the RTX PRO 6000 / RTX 5090 (sm_120). No config is given, so
// config selection picks one; see it with
//
//   flashtile-compile dsl/examples/flash_fwd_sm120.mlir --emit=configs
//
// Q, K, V, O are (batch, seqlen, heads, head_dim) with run-time sizes and
// strides and a contiguous last dimension; LSE is (batch, heads, seqlen_q).

!qkvo = memref<?x?x?x128xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>

attn.kernel @flash_fwd_sm120 arch(#attn.arch<sm_120>) {
^bb0(%q: !qkvo, %k: !qkvo, %v: !qkvo, %o: !qkvo, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse {causal} : !qkvo, !qkvo, !qkvo -> !qkvo, !lse
}
