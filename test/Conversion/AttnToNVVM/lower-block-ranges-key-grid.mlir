// RUN: flashtile-opt %s --convert-attn-to-nvvm | FileCheck %s

// A key-grid block mask (attn.block_ranges key_grid, the backward's main
// kernel): the workspaces are `q_ranges` and `q_tiles`, its tiles kernel is
// the query grid's (per query head here: the mask reads the head), and its
// ranges kernel walks, per KV tile, the query tiles of every head of the KV
// head's group.

!t = memref<?x?x?x64xbf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
!ids = memref<?xi32, strided<[?]>>

// CHECK-LABEL: llvm.func @heads_q_tiles(
// CHECK-SAME:    attn.workspace_params = {q_ranges = 27 : i64, q_tiles = 28 : i64}
// CHECK-SAME:    nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK:         nvvm.read.ptx.sreg.ctaid.y
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.or.aligned.all"
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 1 : i64} : i8, !llvm.ptr<1>

// The ranges kernel: one thread per KV tile (x), its KV head (y); the group
// is heads_q / heads_kv, the walk one loop over (query tile, head) pairs
// whose byte is read only where the tiles kernel wrote it.
// CHECK-LABEL: llvm.func @heads_q_ranges(
// CHECK-SAME:    nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK:         nvvm.read.ptx.sreg.ctaid.y
// CHECK:         llvm.udiv
// CHECK:         ^bb{{[0-9]+}}(%{{.*}}: i32, %{{.*}}: i1, %{{.*}}: i1, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32):
// CHECK:         llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr<1> -> i8
// CHECK-NOT:     llvm.load
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK:         llvm.return

// The kernel reads the four fields of its (batch, KV head, KV tile).
// CHECK-LABEL: llvm.func @heads(
// CHECK-SAME:    %[[QWS:[^ :]+]]: !llvm.ptr<1>, %{{[^ :]+}}: !llvm.ptr<1>, %{{[^ :]+}}: i32) attributes
// CHECK:         llvm.getelementptr %[[QWS]]
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> i32
attn.kernel @heads arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 64, tile_n = 64, stages = 1, warps = 4, q_in_regs = false>) attributes {smem_bytes = 16384 : i64, arg_names = ["ids"], grid = "keys", problem = #attn.problem<causal = true, window_left = -1, window_right = 0, softmax_scale = 1.250000e-01 : f32>} {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse, %ids: !ids):
  %m, %h, %hkv, %b, %sq, %sk = attn.block_context %q, %k : !t, !t
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %r:4 = attn.block_ranges %m, %b, %hkv, %sq within %c0, %c0, %c4, %c4 attributes {key_grid, per_head, tile_m = 64 : i64, tile_n = 64 : i64} {
  ^bb0(%bi: index, %hi: index, %qi: index, %ki: index):
    %tab = attn.kernel_arg 0 : !ids
    %a = memref.load %tab[%qi] : !ids
    %c = memref.load %tab[%ki] : !ids
    %same = arith.cmpi eq, %a, %c : i32
    %hc = arith.constant 2 : index
    %even = arith.cmpi ult, %hi, %hc : index
    %keep = arith.ori %same, %even : i1
    attn.yield %keep : i1
  }
}
