// Tests for the movie tables' plain functions (schema.h).
#include "movies/schema.h"

#include <gtest/gtest.h>

namespace leasehold::movies {
namespace {

// from_chars() read "inf" and "nan" as doubles, and a movie's fps or a
// frame row's place stored so was taken (found by fuzzing,
// fuzz/corpus/movies_stored/regress-*).
TEST(MoviesSchema, StoredDoublesAreFiniteDecimalNumbers) {
  double d = 7;
  EXPECT_TRUE(parse_double("29.97002997002997", d));
  EXPECT_EQ(d, 29.97002997002997);
  EXPECT_TRUE(parse_double(format_double(0.1 + 0.2), d));
  EXPECT_EQ(d, 0.1 + 0.2);
  for (const char* bad : {"inf", "-inf", "infinity", "nan", "NaN", "1e400", "", "1.5x", " 1"}) {
    d = 7;
    EXPECT_FALSE(parse_double(bad, d)) << bad;
    EXPECT_EQ(d, 7) << bad;
  }
}

}  // namespace
}  // namespace leasehold::movies
