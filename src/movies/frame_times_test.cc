// The frame times' parts in the store: what a probe writes reads back whole,
// for a movie of one part or several, steady or jittery; damage and a
// count that does not match are errors, a movie without times kNotFound.
#include "movies/frame_times.h"

#include <gtest/gtest.h>

#include <random>

#include "movies/schema.h"
#include "store/memory/memory_store.h"

namespace leasehold::movies {
namespace {

class FrameTimesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store_->ensure_table(times_table_spec()).ok()); }

  // `frames` frames of a 30000/1001 fps phone movie in a 1/90000 time base,
  // each a little early or late, a key frame every 60.
  static tracer::FrameTimes jittery(int64_t frames) {
    tracer::FrameTimes t{.time_base_num = 1, .time_base_den = 90000, .pts = {}, .keys = {}};
    std::mt19937 random(11);
    int64_t pts = 1234;
    for (int64_t n = 0; n < frames; ++n) {
      t.pts.push_back(pts);
      pts += 3003 + static_cast<int64_t>(random() % 61) - 30;
      if (n % 60 == 0) t.keys.push_back(n);
    }
    return t;
  }

  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
};

TEST_F(FrameTimesTest, WhatIsWrittenReadsBackWhole) {
  for (const int64_t frames : {int64_t{1}, int64_t{59}, kFramesPerTimesPart,
                               2 * kFramesPerTimesPart + 7}) {
    SCOPED_TRACE(frames);
    const std::string id = "m" + std::to_string(frames);
    const tracer::FrameTimes times = jittery(frames);
    ASSERT_TRUE(write_frame_times(*store_, id, times).ok());
    Result<tracer::FrameTimes> read = read_frame_times(*store_, id, frames);
    ASSERT_TRUE(read.ok()) << read.status().to_string();
    EXPECT_EQ(read->time_base_den, 90000);
    EXPECT_EQ(read->pts, times.pts);
    EXPECT_EQ(read->keys, times.keys);
    auto parts = store_->query(kTimesTable, movie_pk(id), KeyRange::all(), {});
    ASSERT_TRUE(parts.ok());
    EXPECT_EQ(static_cast<int64_t>(parts->items.size()),
              (frames + kFramesPerTimesPart - 1) / kFramesPerTimesPart);
  }
}

TEST_F(FrameTimesTest, ASteadyRatePacksSmall) {
  tracer::FrameTimes t{.time_base_num = 1, .time_base_den = 15360, .pts = {}, .keys = {}};
  for (int64_t n = 0; n < kFramesPerTimesPart; ++n) {
    t.pts.push_back(n * 512);
    if (n % 250 == 0) t.keys.push_back(n);
  }
  ASSERT_TRUE(write_frame_times(*store_, "steady", t).ok());
  auto parts = store_->query(kTimesTable, movie_pk("steady"), KeyRange::all(), {});
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->items.size(), 1u);
  EXPECT_LT(get_string_or(parts->items[0], "times_z").size(), 1200u);
}

TEST_F(FrameTimesTest, MissingDamagedOrMiscountedTimesAreErrors) {
  EXPECT_EQ(read_frame_times(*store_, "none", 10).status().code(), Code::kNotFound);
  ASSERT_TRUE(write_frame_times(*store_, "m", jittery(100)).ok());
  EXPECT_EQ(read_frame_times(*store_, "m", 101).status().code(), Code::kInternal);
  Item damaged{{"pk", movie_pk("m")}, {"sk", "0000000000"}, {"times_z", std::string("AAAA")}};
  ASSERT_TRUE(store_->put(kTimesTable, damaged, {}).ok());
  EXPECT_EQ(read_frame_times(*store_, "m", 100).status().code(), Code::kInternal);
  tracer::FrameTimes backwards = jittery(10);
  std::swap(backwards.pts[2], backwards.pts[3]);
  EXPECT_EQ(write_frame_times(*store_, "b", backwards).code(), Code::kInvalidArgument);
  EXPECT_EQ(write_frame_times(*store_, "e", tracer::FrameTimes{}).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::movies
