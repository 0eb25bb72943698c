//===- ExamplePlan.h - The launch plan the runtime tests use ----*- C++ -*-===//
//
// The format's example: a forward kernel with GQA, ALiBi-like slopes, a
// prefix length, a softmax scale with a default and a workspace. One field
// per line, so that tests can break it with a text replacement.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_TEST_RUNTIME_EXAMPLEPLAN_H
#define FLASHTILE_TEST_RUNTIME_EXAMPLEPLAN_H

#include <string>

namespace flashtile::test {

inline std::string getExamplePlanJson() {
  std::string params =
      R"({"name": "q", "type": "ptr", "from": {"data": "q"}},
      {"name": "k", "type": "ptr", "from": {"data": "k"}},
      {"name": "v", "type": "ptr", "from": {"data": "v"}},
      {"name": "o", "type": "ptr", "from": {"data": "o"}},
      {"name": "lse", "type": "ptr", "from": {"data": "lse"}},
      {"name": "seqlen_q", "type": "i32", "from": {"value": "seqlen_q"}},
      {"name": "seqlen_k", "type": "i32", "from": {"value": "seqlen_k"}},
      {"name": "heads_q", "type": "i32", "from": {"value": "heads_q"}},
      {"name": "heads_kv", "type": "i32", "from": {"value": "heads_kv"}},
      {"name": "q_stride_batch", "type": "i64", "from": {"stride": ["q", 0]}},
      {"name": "q_stride_seq", "type": "i64", "from": {"stride": ["q", 1]}},
      {"name": "q_stride_head", "type": "i64", "from": {"stride": ["q", 2]}},
      {"name": "k_stride_seq", "type": "i64", "from": {"stride": ["k", 1]}},
      {"name": "lse_stride_head", "type": "i64", "from": {"stride": ["lse", 1]}},
      {"name": "slopes", "type": "ptr", "from": {"data": "slopes"}},
      {"name": "slopes_size0", "type": "i64", "from": {"dim": ["slopes", 0]}},
      {"name": "prefix_len", "type": "i32", "from": {"scalar": "prefix_len"}},
      {"name": "softmax_scale", "type": "f32", "from": {"scalar": "softmax_scale"}},
      {"name": "tiles", "type": "i32", "from": {"value": {"mul": [{"ceil_div": ["seqlen_q", 128]}, "heads_q", "batch"]}}},
      {"name": "ws", "type": "ptr", "from": {"workspace": "partials"}})";
  return R"({
  "format": "flashtile-launch-plan",
  "version": 2,
  "name": "flash_fwd",
  "arch": "sm_120",
  "isa": "sm_90",
  "code_path": "sm80",
  "arguments": [
    {"name": "q", "kind": "tensor", "role": "input", "dtype": "bf16", "shape": ["batch", "seqlen_q", "heads_q", 128], "align_bytes": 16, "contiguous_last_dim": true, "stride_multiple": 8},
    {"name": "k", "kind": "tensor", "role": "input", "dtype": "bf16", "shape": ["batch", "seqlen_k", "heads_kv", 128], "align_bytes": 16, "contiguous_last_dim": true, "stride_multiple": 8},
    {"name": "v", "kind": "tensor", "role": "input", "dtype": "bf16", "shape": ["batch", "seqlen_k", "heads_kv", 128], "align_bytes": 16, "contiguous_last_dim": true, "stride_multiple": 8},
    {"name": "o", "kind": "tensor", "role": "output", "dtype": "bf16", "shape": ["batch", "seqlen_q", "heads_q", 128], "align_bytes": 16, "contiguous_last_dim": true, "stride_multiple": 8},
    {"name": "lse", "kind": "tensor", "role": "output", "dtype": "f32", "shape": ["batch", "heads_q", "seqlen_q"], "align_bytes": 4, "contiguous_last_dim": true, "stride_multiple": 1},
    {"name": "slopes", "kind": "tensor", "role": "input", "dtype": "f32", "shape": [null], "align_bytes": 4, "contiguous_last_dim": false, "stride_multiple": 1},
    {"name": "prefix_len", "kind": "scalar", "dtype": "i32"},
    {"name": "softmax_scale", "kind": "scalar", "dtype": "f32", "default": 0.08838834764831845}
  ],
  "sizes": [
    {"name": "batch", "arg": "q", "dim": 0},
    {"name": "seqlen_q", "arg": "q", "dim": 1},
    {"name": "heads_q", "arg": "q", "dim": 2},
    {"name": "seqlen_k", "arg": "k", "dim": 1},
    {"name": "heads_kv", "arg": "k", "dim": 2}
  ],
  "checks": [
    {"condition": {"ge": ["heads_kv", 1]}, "message": "heads_kv must be at least 1"},
    {"condition": {"eq": [{"mod": ["heads_q", "heads_kv"]}, 0]}, "message": "heads_q must be a multiple of heads_kv"}
  ],
  "kernels": [
    {"symbol": "flash_fwd", "cubin": "flash_fwd.cubin", "block": [256, 1, 1], "dynamic_smem_bytes": 65536,
     "grid": [{"ceil_div": ["seqlen_q", 128]}, "heads_q", "batch"],
     "params": [)" +
         params + R"(],
     "registers": 255, "spill_stores": 0, "spill_loads": null}
  ],
  "workspaces": [{"name": "partials", "bytes": {"mul": ["batch", 4]}}],
  "dispatch": [{"when": {"ge": ["num_sms", 100]}, "kernels": [0]}],
  "info": {"kernel": "flash_fwd", "dtype": "bf16", "head_dim": 128, "causal": true, "window": [-1, 0], "softmax_scale": 0.08838834764831845, "config": {"tile_m": 128, "tile_n": 64}}
}
)";
}

} // namespace flashtile::test

#endif // FLASHTILE_TEST_RUNTIME_EXAMPLEPLAN_H
