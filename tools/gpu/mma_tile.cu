// One warp runs one mma.sync of each entry of FlashTile's mma table, with
// its operands gathered by the fragment tables the compiler uses
// (flashtile-mma-tables, MmaFragments.h) and its result scattered by them:
// tools/gpu/check_mma.py compares the result with torch. A wrong table entry
// (a lane's row, column or packing order) shows as a wrong product.
//
// A is m x k and B is k x n, both row-major, elements of 1 or 2 bytes;
// `ai`, `bi`, `ci` give, per (lane, element), the element's offset in A, B
// and D (row * columns + column). Built with nvcc -cubin by
// tools/gpu/build_kernels.sh.
#include <cstdint>

__device__ void gather(const void *src, const int *idx, int bytes, int regs,
                       uint32_t *out) {
  int lane = threadIdx.x, per = 4 / bytes;
  for (int r = 0; r < regs; ++r) {
    uint32_t v = 0;
    for (int j = 0; j < per; ++j) {
      int off = idx[lane * regs * per + r * per + j];
      uint32_t e = bytes == 1 ? static_cast<const uint8_t *>(src)[off]
                              : static_cast<const uint16_t *>(src)[off];
      v |= e << (8 * bytes * j); // element j in the lower bits first
    }
    out[r] = v;
  }
}

#define MMA_F32(NAME, SHAPE, TYPES, BYTES)                                     \
  extern "C" __global__ void NAME(const void *A, const void *B, float *D,      \
                                  const int *ai, const int *bi,                \
                                  const int *ci) {                             \
    uint32_t a[4], b[2];                                                       \
    gather(A, ai, BYTES, 4, a);                                                \
    gather(B, bi, BYTES, 2, b);                                                \
    float c[4] = {0.f, 0.f, 0.f, 0.f};                                         \
    asm volatile("mma.sync.aligned." SHAPE ".row.col." TYPES                   \
                 " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9},"              \
                 " {%0, %1, %2, %3};"                                          \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])              \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),      \
                   "r"(b[1]));                                                 \
    for (int i = 0; i < 4; ++i)                                                \
      D[ci[threadIdx.x * 4 + i]] = c[i];                                       \
  }

MMA_F32(mma_f16_f16_f32, "m16n8k16", "f32.f16.f16.f32", 2)
MMA_F32(mma_bf16_bf16_f32, "m16n8k16", "f32.bf16.bf16.f32", 2)
MMA_F32(mma_e4m3_e4m3_f32, "m16n8k32", "f32.e4m3.e4m3.f32", 1)
MMA_F32(mma_e5m2_e5m2_f32, "m16n8k32", "f32.e5m2.e5m2.f32", 1)

extern "C" __global__ void mma_s8_s8_s32(const void *A, const void *B, int *D,
                                         const int *ai, const int *bi,
                                         const int *ci) {
  uint32_t a[4], b[2];
  gather(A, ai, 1, 4, a);
  gather(B, bi, 1, 2, b);
  int c[4] = {0, 0, 0, 0};
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
               " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9},"
               " {%0, %1, %2, %3};"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
  for (int i = 0; i < 4; ++i)
    D[ci[threadIdx.x * 4 + i]] = c[i];
}

// f16 accumulators: two elements per register, element 2r in the lower
// half of register r.
extern "C" __global__ void mma_f16_f16_f16(const void *A, const void *B,
                                           uint16_t *D, const int *ai,
                                           const int *bi, const int *ci) {
  uint32_t a[4], b[2];
  gather(A, ai, 2, 4, a);
  gather(B, bi, 2, 2, b);
  uint32_t c[2] = {0, 0};
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"
               " {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};"
               : "+r"(c[0]), "+r"(c[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
  for (int i = 0; i < 4; ++i)
    D[ci[threadIdx.x * 4 + i]] = uint16_t(c[i / 2] >> (16 * (i % 2)));
}
