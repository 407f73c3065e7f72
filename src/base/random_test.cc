#include "leasehold/random.h"

#include <gtest/gtest.h>

#include <set>

namespace leasehold {
namespace {

TEST(SeededRandom, SameSeedSameSequence) {
  SeededRandom a(42), b(42), c(43);
  std::vector<uint64_t> va, vb, vc;
  for (int i = 0; i < 100; ++i) {
    va.push_back(a.next_u64());
    vb.push_back(b.next_u64());
    vc.push_back(c.next_u64());
  }
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
}

TEST(Random, UniformStaysInRangeAndCoversIt) {
  SeededRandom r(7);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const int64_t v = r.uniform(-3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  for (int i = 0; i < 1000; ++i) {
    const double d = r.uniform01();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(Tokens, AreWellFormedAndDistinct) {
  SystemRandom r;
  std::set<std::string> tokens;
  for (int i = 0; i < 1000; ++i) {
    const std::string t = random_token(r);
    ASSERT_TRUE(is_well_formed_token(t)) << t;
    tokens.insert(t);
  }
  EXPECT_EQ(tokens.size(), 1000u);
}

TEST(Tokens, MalformedOnesAreRecognised) {
  EXPECT_FALSE(is_well_formed_token(""));
  EXPECT_FALSE(is_well_formed_token(std::string(31, 'a')));
  EXPECT_FALSE(is_well_formed_token(std::string(33, 'a')));
  EXPECT_FALSE(is_well_formed_token(std::string(32, 'A')));
  EXPECT_FALSE(is_well_formed_token(std::string(32, 'g')));
  EXPECT_TRUE(is_well_formed_token(std::string(32, 'f')));
}

}  // namespace
}  // namespace leasehold
