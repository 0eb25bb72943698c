// RUN: flashtile-opt %s -split-input-file -verify-diagnostics --attn-build-backward

// What the backward does not cover yet is refused at the attention, with
// the way out; nothing is built.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!bt = memref<?x?xi32, strided<[?, ?]>>
attn.kernel @paged arch(#attn.arch<sm_120>) attributes {arg_names = ["block_table"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %table: !bt):
  // expected-error @below {{the backward does not cover paged K and V yet; compile the forward alone (--direction=fwd)}}
  attn.attention %q, %k, %v -> %o, %lse pages(%table : !bt) : !t, !t, !t -> !t, !lse
}

// -----

// A tile program states its own kernels: there is no attention to
// differentiate.
!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{has no attn.attention: the backward is built from a kernel-level attention}}
attn.kernel @tiles arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
}

// -----

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-error @below {{attn-build-backward takes a module of one kernel-level attn.kernel; it has 2}}
module {
  attn.kernel @a arch(#attn.arch<sm_120>) {
  ^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
    attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  }
  attn.kernel @b arch(#attn.arch<sm_120>) {
  ^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
    attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  }
}
