// Tests for probing and reading videos: what probe() reports for real
// videos, that frames are counted by decoding, and that files which are not
// videos, or are cut short, are refused with a clear error.
#include "tracer/video.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::tracer {
namespace {

class VideoTest : public ::testing::Test {
 protected:
  // A movie of `frames` frames with one moving spot.
  std::string movie(const std::string& name, const std::string& fourcc, int64_t frames) {
    SyntheticMovie m;
    m.frames = frames;
    m.fourcc = fourcc;
    m.spots.push_back(spot_);
    std::string path = (dir_ / name).string();
    Status written = write_synthetic_movie(path, m);
    EXPECT_TRUE(written.ok()) << written.to_string();
    return path;
  }

  std::string file_with(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // The first `share` of the file at `path`, as a new file.
  std::string truncated(const std::string& path, double share) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes.resize(static_cast<size_t>(static_cast<double>(bytes.size()) * share));
    return file_with("cut_" + std::filesystem::path(path).filename().string(), bytes);
  }

  const Spot spot_{.x0_px = 60, .y0_px = 50, .vx_px_per_frame = 0.7};
  const leasehold::testing::TempDir tmp_{"video_test_"};
  const std::filesystem::path dir_ = tmp_.path();
};

TEST_F(VideoTest, ProbeReportsTheFormatAndCountsDecodedFrames) {
  Result<VideoInfo> info = probe(movie("m.avi", "MJPG", 23));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->width, 160);
  EXPECT_EQ(info->height, 120);
  EXPECT_DOUBLE_EQ(info->fps, 25);
  EXPECT_EQ(info->frame_count, 23);
  EXPECT_EQ(info->codec, "MJPG");
}

TEST_F(VideoTest, ProbeReadsEveryCodecTheTestsUse) {
  for (auto [name, fourcc] : {std::pair{"a.mp4", "mp4v"}, {"b.avi", "XVID"}, {"c.mp4", "avc1"}}) {
    Result<VideoInfo> info = probe(movie(name, fourcc, 12));
    ASSERT_TRUE(info.ok()) << fourcc << ": " << info.status().to_string();
    EXPECT_EQ(info->frame_count, 12) << fourcc;
    EXPECT_EQ(info->width, 160) << fourcc;
    EXPECT_TRUE(info->codec.has_value()) << fourcc;
  }
}

TEST_F(VideoTest, FilesThatAreNotVideosAreRefusedClearly) {
  std::mt19937 random(7);
  std::string noise(64 * 1024, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  const std::string cases[] = {
      file_with("random.mp4", noise),
      file_with("text.avi", "this is not a video\n"),
      file_with("empty.mp4", ""),
      dir_.string(),
  };
  for (const std::string& path : cases) {
    Result<VideoInfo> info = probe(path);
    ASSERT_FALSE(info.ok()) << path;
    EXPECT_EQ(info.status().code(), Code::kInvalidArgument) << path;
    EXPECT_NE(info.status().message().find(path), std::string::npos) << info.status().message();
  }
  Result<VideoInfo> missing = probe((dir_ / "missing.mp4").string());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
}

TEST_F(VideoTest, AnMp4CutShortIsRefused) {
  // An MP4 that OpenCV writes has its index at the end: without it, nothing
  // can be read.
  Result<VideoInfo> info = probe(truncated(movie("m.mp4", "mp4v", 20), 0.6));
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), Code::kInvalidArgument);
  EXPECT_NE(info.status().message().find("not a video"), std::string::npos)
      << info.status().message();
}

TEST_F(VideoTest, AnAviCutShortHasTheFramesThatDecode) {
  // An AVI streams its frames before its index: what is left of them
  // decodes, and the frame count says how many that is.
  Result<VideoInfo> info = probe(truncated(movie("m.avi", "MJPG", 20), 0.5));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_GT(info->frame_count, 0);
  EXPECT_LT(info->frame_count, 20);
}

TEST_F(VideoTest, LimitsBoundTheWork) {
  std::string path = movie("m.avi", "MJPG", 12);
  Result<VideoInfo> long_video = probe(path, VideoLimits{.frames_max = 10});
  EXPECT_EQ(long_video.status().code(), Code::kInvalidArgument);
  EXPECT_NE(long_video.status().message().find("more than 10 frames"), std::string::npos)
      << long_video.status().message();
  Result<VideoInfo> big_frames = probe(path, VideoLimits{.side_max_px = 100});
  EXPECT_EQ(big_frames.status().code(), Code::kInvalidArgument);
  Result<VideoInfo> fast = probe(path, VideoLimits{.fps_max = 10});
  EXPECT_EQ(fast.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(probe(path, VideoLimits{.frames_max = 12}).ok());
}

TEST_F(VideoTest, TheReaderDecodesSequentiallyAndConvertsOnlyWhenAsked) {
  std::string path = movie("m.avi", "MJPG", 5);
  Result<std::unique_ptr<FrameReader>> opened = FrameReader::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  FrameReader& reader = **opened;
  EXPECT_EQ(reader.frame(), -1);
  EXPECT_EQ(reader.format().width, 160);
  for (int64_t f = 0; f < 5; ++f) {
    bool want_pixels = f % 2 == 0;
    Result<bool> decoded = reader.next(want_pixels);
    ASSERT_TRUE(decoded.ok() && *decoded) << f;
    EXPECT_EQ(reader.frame(), f);
    if (want_pixels) {
      FrameImage image = reader.image();
      EXPECT_EQ(image.width, 160);
      EXPECT_EQ(image.height, 120);
      EXPECT_EQ(image.channels, 3);
      EXPECT_GE(image.row_bytes, 3 * 160u);
      ASSERT_NE(image.pixels, nullptr);
      // The spot's centre is bright.
      SpotPosition at = spot_position(spot_, f);
      const uint8_t* pixel = image.pixels +
                             static_cast<size_t>(std::lround(at.y)) * image.row_bytes +
                             3 * static_cast<size_t>(std::lround(at.x));
      EXPECT_GT(pixel[1], 200) << f;
    }
  }
  Result<bool> end = reader.next(true);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

}  // namespace
}  // namespace leasehold::tracer
