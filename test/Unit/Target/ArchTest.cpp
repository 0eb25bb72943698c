//===- ArchTest.cpp - The target table ------------------------------------===//

#include "flashtile/Target/Arch.h"

#include "gtest/gtest.h"

using namespace flashtile;

TEST(ArchTest, Sm120TakesTheSm80PathWith99KiB) {
  const ArchInfo &sm120 = getArchInfo(Chip::sm_120);
  EXPECT_EQ(sm120.name, "sm_120");
  EXPECT_EQ(sm120.codePath, CodePath::Sm80);
  EXPECT_EQ(sm120.smemPerBlock, 101376);
  EXPECT_EQ(sm120.smemPerSM, 102400);
  EXPECT_EQ(sm120.smemReservedPerBlock, 1024);
  EXPECT_EQ(sm120.ptxTarget, "sm_120");
  EXPECT_EQ(sm120.minPtxVersion, 87);
  EXPECT_EQ(getArchInfo(Chip::sm_121).codePath, CodePath::Sm80);
}

TEST(ArchTest, Sm80Has163KiBPerBlock) {
  const ArchInfo &sm80 = getArchInfo(Chip::sm_80);
  EXPECT_EQ(sm80.smemPerBlock, 166912);
  EXPECT_EQ(sm80.smemPerSM, 167936);
}

TEST(ArchTest, Sm100IsRecognisedButHasNoSm80Path) {
  const ArchInfo *sm100 = lookupArch("sm_100");
  ASSERT_NE(sm100, nullptr);
  EXPECT_EQ(sm100->codePath, CodePath::Sm100);
}

TEST(ArchTest, LookupByNameMatchesTheTable) {
  for (const ArchInfo &info : getAllArchs()) {
    EXPECT_EQ(lookupArch(info.name), &getArchInfo(info.chip));
    EXPECT_NE(knownArchNames().find(info.name.str()), std::string::npos);
  }
  EXPECT_EQ(lookupArch("sm_70"), nullptr);
  EXPECT_EQ(lookupArch("SM_120"), nullptr);
}

// The seed's occupancy arithmetic: a 72 KiB block runs once per SM on
// sm_120 and twice on sm_80; a 120 KiB block does not run on sm_120 at all.
TEST(ArchTest, BlocksPerSMCountTheReservation) {
  const ArchInfo &sm120 = getArchInfo(Chip::sm_120);
  const ArchInfo &sm80 = getArchInfo(Chip::sm_80);
  EXPECT_EQ(blocksPerSMBySmem(sm120, 72 * 1024), 1);
  EXPECT_EQ(blocksPerSMBySmem(sm80, 72 * 1024), 2);
  EXPECT_EQ(blocksPerSMBySmem(sm120, 120 * 1024), 0);
  // Two blocks need 49 KiB or less each: (49 KiB + 1 KiB) * 2 = 100 KiB.
  EXPECT_EQ(blocksPerSMBySmem(sm120, 49 * 1024), 2);
  EXPECT_EQ(blocksPerSMBySmem(sm120, 49 * 1024 + 1), 1);
  EXPECT_EQ(blocksPerSMBySmem(sm120, 101376), 1);
  EXPECT_EQ(blocksPerSMBySmem(sm120, 101377), 0);
}

TEST(ArchTest, TuringIsKnownButHasNoCodePath) {
  const ArchInfo &sm75 = getArchInfo(Chip::sm_75);
  EXPECT_EQ(sm75.codePath, CodePath::None);
  EXPECT_FALSE(isaSupportsCodePath(sm75, CodePath::Sm80));
  EXPECT_TRUE(isaSupportsCodePath(getArchInfo(Chip::sm_90), CodePath::Sm80));
  EXPECT_TRUE(isaSupportsCodePath(getArchInfo(Chip::sm_120), CodePath::Sm80));
  EXPECT_EQ(archNamesWithCodePath(CodePath::Sm80),
            "sm_80, sm_86, sm_89, sm_90, sm_120, sm_121");
}
