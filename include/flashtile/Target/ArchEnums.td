//===- ArchEnums.td - Chips and code paths -------------------*- tablegen -*-===//
//
// The chips FlashTile knows and the code paths it lowers through. TableGen
// generates the enums and their string conversions (stringifyChip,
// symbolizeChip, stringifyCodePath, ...); the facts of each chip live in the
// table of lib/Target/Arch.cpp, in the order of `Chip`.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHTILE_TARGET_ARCHENUMS
#define FLASHTILE_TARGET_ARCHENUMS

include "mlir/IR/EnumAttr.td"

def Chip : I32Enum<"Chip", "a chip FlashTile knows", [
    I32EnumCase<"sm_75", 0>,
    I32EnumCase<"sm_80", 1>,
    I32EnumCase<"sm_86", 2>,
    I32EnumCase<"sm_89", 3>,
    I32EnumCase<"sm_90", 4>,
    I32EnumCase<"sm_100", 5>,
    I32EnumCase<"sm_120", 6>,
    I32EnumCase<"sm_121", 7>]> {
  let cppNamespace = "::flashtile";
}

def CodePath : I32Enum<"CodePath", "the instruction family a kernel is lowered through", [
    // The chip lacks cp.async and bf16 mma.sync.m16n8k16 (Turing).
    I32EnumCase<"None", 0, "none">,
    // ldmatrix + mma.sync.m16n8k16 + cp.async (Ampere and later, SM120).
    I32EnumCase<"Sm80", 1, "sm80">,
    // tcgen05 / TMEM (datacenter Blackwell). Recognised, not implemented.
    I32EnumCase<"Sm100", 2, "sm100">]> {
  let cppNamespace = "::flashtile";
}

#endif // FLASHTILE_TARGET_ARCHENUMS
