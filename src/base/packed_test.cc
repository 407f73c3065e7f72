#include "base/packed.h"

#include <gtest/gtest.h>

#include <string>

namespace leasehold {
namespace {

TEST(PackedTest, RepetitiveTextPacksSmallAndComesBackWhole) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "33367,33366,";
  const std::string packed = pack_text(text);
  EXPECT_LT(packed.size(), text.size() / 20);
  EXPECT_EQ(unpack_text(packed, text.size()), text);
  EXPECT_EQ(unpack_text(pack_text(""), 10), std::optional<std::string>(""));
}

TEST(PackedTest, WhatIsNotPackedTextOrUnpacksPastItsBoundIsRefused) {
  EXPECT_EQ(unpack_text("", 100), std::nullopt);
  EXPECT_EQ(unpack_text("not base64!", 100), std::nullopt);
  EXPECT_EQ(unpack_text("aGVsbG8gd29ybGQ=", 100), std::nullopt);  // base64, not zlib
  // A bomb: a megabyte of zeros packs to about a kilobyte.
  const std::string bomb = pack_text(std::string(1 << 20, '0'));
  EXPECT_EQ(unpack_text(bomb, 4096), std::nullopt);
  EXPECT_TRUE(unpack_text(bomb, 1 << 20).has_value());
}

}  // namespace
}  // namespace leasehold
