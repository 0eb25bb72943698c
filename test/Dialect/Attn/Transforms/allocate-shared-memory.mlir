// RUN: flashtile-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(attn.kernel(attn-expand-to-tiles,attn-pipeline-copies,attn-allocate-shared-memory{remarks=true}))'
// The seed's shared-memory arithmetic, through the real expansion and the
// real allocator.

// d = 128, 128x128 tiles, fp16, 1 stage, Q in shared memory: Q + K + V =
// 96 KiB, which fits sm_120's 99 KiB. The O staging tile reuses Q's bytes.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-remark @below {{shared memory: 98304 B of 101376 B per block on sm_120; 1 block(s) per SM by shared memory (102400 B per SM, 1024 B reserved per block)}}
attn.kernel @seed_one_stage arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 1, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-remark @below {{Q: offset 0, 32768 B, live [6, 17], shares bytes with O}}
  // expected-remark @below {{K: offset 32768, 32768 B, live [9, 17]}}
  // expected-remark @below {{V: offset 65536, 32768 B, live [16, 17]}}
  // expected-remark @below {{O: offset 0, 32768 B, live [18, 18], shares bytes with Q}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// Double-buffered K/V: 160 KiB. Refused on sm_120 ...
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-note @below {{hint: use a smaller tile_n or tile_m, fewer stages, or q_in_regs = true so that V can reuse Q's bytes}}
// expected-error @below {{shared memory plan needs 163840 B but sm_120 allows 101376 B per block (config: tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false)}}
attn.kernel @seed_two_stages_sm120 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-note @below {{Q: 32768 B (128x128xf16) at offset 131072}}
  // expected-note @below {{K: 65536 B (128x128xf16 x 2 slots) at offset 0}}
  // expected-note @below {{V: 65536 B (128x128xf16 x 2 slots) at offset 65536}}
  // expected-note @below {{O: 32768 B (128x128xf16) at offset 0}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// ... and accepted on sm_80's 163 KiB.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-remark @below {{shared memory: 163840 B of 166912 B per block on sm_80; 1 block(s) per SM}}
attn.kernel @seed_two_stages_sm80 arch(#attn.arch<sm_80>) config(#attn.config<tile_m = 128, tile_n = 128, stages = 2, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-remark @below {{Q: offset 131072, 32768 B}}
  // expected-remark @below {{K: offset 0, 65536 B}}
  // expected-remark @below {{V: offset 65536, 65536 B}}
  // expected-remark @below {{O: offset 0, 32768 B}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// d = 256 with a 128x64 tile: Q + K + V = 128 KiB is refused on sm_120 ...
!t = memref<?x?x?x256xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-note @below {{hint}}
// expected-error @below {{shared memory plan needs 131072 B but sm_120 allows 101376 B per block}}
attn.kernel @d256_q_in_smem arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 64, stages = 1, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-note @below {{Q: 65536 B (128x256xf16) at offset 0}}
  // expected-note @below {{K: 32768 B (64x256xf16) at offset 65536}}
  // expected-note @below {{V: 32768 B (64x256xf16) at offset 98304}}
  // expected-note @below {{O: 65536 B (128x256xf16) at offset 0}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// ... and with Q in registers V takes Q's bytes: max(Q, V) + K = 96 KiB fits.
!t = memref<?x?x?x256xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-remark @below {{shared memory: 98304 B of 101376 B per block on sm_120; 1 block(s) per SM}}
attn.kernel @d256_q_in_regs arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 64, stages = 1, warps = 8, q_in_regs = true>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-remark @below {{Q: offset 0, 65536 B, live [6, 10], shares bytes with V, O}}
  // expected-remark @below {{K: offset 65536, 32768 B}}
  // expected-remark @below {{V: offset 0, 32768 B, live [17, 18], shares bytes with Q, O}}
  // expected-remark @below {{O: offset 0, 65536 B}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// A 72 KiB block (d = 128, 128x80, 1 stage): one block per SM on sm_120 ...
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-remark @below {{shared memory: 73728 B of 101376 B per block on sm_120; 1 block(s) per SM by shared memory}}
attn.kernel @seventy_two_kib_sm120 arch(#attn.arch<sm_120>) config(#attn.config<tile_m = 128, tile_n = 80, stages = 1, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-remark @below {{Q: offset 0, 32768 B}}
  // expected-remark @below {{K: offset 32768, 20480 B}}
  // expected-remark @below {{V: offset 53248, 20480 B}}
  // expected-remark @below {{O: offset 0, 32768 B}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}

// -----

// ... and two on sm_80.
!t = memref<?x?x?x128xf16, strided<[?, ?, ?, 1]>>
!lse = memref<?x?x?xf32>
// expected-remark @below {{shared memory: 73728 B of 166912 B per block on sm_80; 2 block(s) per SM by shared memory}}
attn.kernel @seventy_two_kib_sm80 arch(#attn.arch<sm_80>) config(#attn.config<tile_m = 128, tile_n = 80, stages = 1, warps = 8, q_in_regs = false>) {
^bb0(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !lse):
  // expected-remark @below {{Q: offset 0}}
  // expected-remark @below {{K: offset 32768}}
  // expected-remark @below {{V: offset 53248}}
  // expected-remark @below {{O: offset 0}}
  attn.attention %q, %k, %v -> %o, %lse : !t, !t, !t -> !t, !lse
}
