// RUN: flashtile-opt %s -split-input-file -verify-diagnostics
// The hook contract (Hooks.cpp): what a score_mod / mask_mod may contain and
// read, and the verifiers of the ops hooks use. One error per split, at the
// offending op.

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @unsupported_op arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @below {{'math.atan' op is not supported in a score_mod hook: hooks are scalar functions of arith, math (tanh, exp, exp2, log, log2, sqrt, rsqrt, absf, absi, powf, erf, fma, floor, ceil, sin, cos), memref.load from the kernel's extra tensors, and attn.size}}
    %a = math.atan %s : f32
    attn.yield %a : f32
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @load_from_q arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @below {{'memref.load' op uses a value defined outside the score_mod hook; hooks may read only their own arguments and the kernel's extra arguments (after LSE)}}
    %x = memref.load %q[%b, %i, %h, %j] : !t
    %y = arith.extf %x : f16 to f32
    attn.yield %y : f32
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @load_from_alloca arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error @below {{'memref.alloca' op is not supported in a mask_mod hook}}
    %m = memref.alloca() : memref<4xi1>
    %x = memref.load %m[%i] : memref<4xi1>
    attn.yield %x : i1
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// A value a hook could capture from the kernel's body: at kernel level the
// body holds only the attention, so the constant is refused first.
attn.kernel @outside_value arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{'arith.constant' op cannot sit next to an attn.attention}}
  %c = arith.constant 2.0 : f32
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %x = arith.mulf %s, %c : f32
    attn.yield %x : f32
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @f64_value arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @below {{'arith.extf' op result type 'f64' is not supported in a score_mod hook (index, i1..i64, f16, bf16, f32)}}
    %x = arith.extf %s : f32 to f64
    %y = arith.truncf %x : f64 to f32
    attn.yield %y : f32
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @size_name arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error @below {{'attn.size' op size 'seqlen' is unknown; expected one of batch, seqlen_q, seqlen_k, heads_q, heads_kv}}
    %n = attn.size "seqlen" : index
    %x = arith.cmpi slt, %j, %n : index
    attn.yield %x : i1
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kernel_arg_range arch(#attn.arch<sm_120>) attributes {arg_names = ["s"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %x: f32):
  // expected-error @below {{'attn.kernel_arg' op refers to extra argument 1 but the kernel has 1}}
  %a = attn.kernel_arg 1 : f32
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @kernel_arg_type arch(#attn.arch<sm_120>) attributes {arg_names = ["s"]} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %x: f32):
  // expected-error @below {{'attn.kernel_arg' op has type 'i32' but extra argument 0 is 'f32'}}
  %a = attn.kernel_arg 0 : i32
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @modify_scores_empty arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  // expected-error @below {{'attn.modify_scores' op has neither a score_mod nor a mask_mod region}}
  %r = attn.modify_scores %s, %c, %c, %c, %c, %c, %c, %f : !attn.frag<64x32xf32>
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @modify_scores_isolated arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  %c = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  %s = attn.splat {value = 0.0 : f32} : !attn.frag<64x32xf32>
  %r = attn.modify_scores %s, %c, %c, %c, %c, %c, %c, %f : !attn.frag<64x32xf32>
  score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @below {{'arith.mulf' op uses a value defined outside the score_mod hook}}
    %y = arith.mulf %x, %f : f32
    attn.yield %y : f32
  }
}

// -----

// A sink yields the f32 logit of a (batch, head).
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @sink_wrong_type arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{'attn.attention' op sink region must yield exactly one 'f32'}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  sink {
  ^bb0(%b: index, %h: index):
    %t = arith.constant true
    attn.yield %t : i1
  }
}

// -----

!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
attn.kernel @sink_wrong_args arch(#attn.arch<sm_120>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-error @below {{'attn.attention' op sink region must take (index, index), got (index)}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
  sink {
  ^bb0(%h: index):
    %z = arith.constant 1.0 : f32
    attn.yield %z : f32
  }
}
