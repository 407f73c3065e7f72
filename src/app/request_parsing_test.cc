// Tests for the app's readers of request parts (request_parsing.h).
#include "app/request_parsing.h"

#include <gtest/gtest.h>

namespace leasehold::app {
namespace {

// "-0.jpg" was taken as frame 0, a second URL for its image (found by
// fuzzing, fuzz/corpus/app_requests/regress-*).
TEST(FrameNumber, EachFrameHasOneName) {
  EXPECT_EQ(frame_number("0.jpg"), 0);
  EXPECT_EQ(frame_number("120.jpg"), 120);
  EXPECT_EQ(frame_number("9223372036854775807.jpg"), INT64_MAX);
  for (const char* bad : {"-0.jpg", "-1.jpg", "+1.jpg", "0120.jpg", ".jpg", "1.png", " 1.jpg",
                          "9223372036854775808.jpg"}) {
    EXPECT_EQ(frame_number(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace leasehold::app
