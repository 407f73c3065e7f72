// Tests for probing and reading videos: what probe() reports for real
// videos, that frames are counted by decoding, and that files which are not
// videos, or are cut short, are refused with a clear error.
#include "tracer/video.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

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

// Movies as phones and cameras record them, made with the ffmpeg command
// (scripts/setup.sh installs it): H.264 with B-frames (so decoding order is
// not presentation order) and key frames some frames apart.
class RecordedMovieTest : public VideoTest {
 protected:
  // testsrc2 frames (each different) at 30 fps, through `filter`, as H.264
  // with a key frame every `gop` frames, kept at their own timestamps.
  std::string recorded(const std::string& name, double seconds, const std::string& filter,
                       int gop) {
    const std::string path = (dir_ / name).string();
    const std::string command =
        "ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=30 -t " +
        std::to_string(seconds) + (filter.empty() ? "" : " -vf \"" + filter + "\"") +
        " -fps_mode passthrough -c:v libx264 -preset ultrafast -bf 2 -g " + std::to_string(gop) +
        " -pix_fmt yuv420p '" + path + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return path;
  }

  // Every frame's pixels, decoded from the start.
  std::vector<std::string> every_frame(const std::string& path) {
    std::vector<std::string> frames;
    auto reader = FrameReader::open(path);
    EXPECT_TRUE(reader.ok()) << reader.status().to_string();
    if (!reader.ok()) return frames;
    for (;;) {
      Result<bool> more = (*reader)->next(true);
      EXPECT_TRUE(more.ok()) << more.status().to_string();
      if (!more.ok() || !*more) break;
      frames.push_back(pixels_of((*reader)->image()));
    }
    return frames;
  }

  static std::string pixels_of(const FrameImage& image) {
    std::string bytes;
    for (int y = 0; y < image.height; ++y) {
      const auto* row = reinterpret_cast<const char*>(image.pixels + y * image.row_bytes);
      bytes.append(row, static_cast<size_t>(image.width * image.channels));
    }
    return bytes;
  }
};

// 2 s at 30 fps, then 4 s at 10 fps (low light halves a phone's rate, or
// more): each frame's time is its own, not its number over the average
// rate (16.7 fps), which would put frame 30 (1.000 s) at 1.8 s.
TEST_F(RecordedMovieTest, EachFramesTimeIsItsPresentationTime) {
  const std::string path =
      recorded("vfr.mp4", 6, "select='lt(t,2)+gte(t,2)*not(mod(n,3))'", 25);
  Result<VideoInfo> info = probe(path);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_EQ(info->frame_count, 100);
  ASSERT_EQ(info->times.pts.size(), 100u);
  EXPECT_TRUE(info->rate_varies);
  EXPECT_NEAR(info->average_fps, 99 / 5.9, 0.01);
  for (int64_t n = 0; n < 100; ++n) {
    const double expected_us = n < 60 ? n * 1e6 / 30 : 2e6 + (n - 60) * 1e5;
    EXPECT_NEAR(info->times.us(n), expected_us, 1000) << "frame " << n;
  }
  // A reader going through the movie says the same times.
  auto reader = FrameReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  for (int64_t n = 0; n < 100; ++n) {
    ASSERT_TRUE(*(*reader)->next(false)) << n;
    EXPECT_EQ((*reader)->time_us(), info->times.us(n)) << n;
  }
}

TEST_F(RecordedMovieTest, ASteadyRateDoesNotVary) {
  Result<VideoInfo> info = probe(recorded("cfr.mp4", 2, "", 25));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->frame_count, 60);
  EXPECT_FALSE(info->rate_varies);
  EXPECT_NEAR(info->average_fps, 30, 0.01);
  EXPECT_EQ(info->codec, "avc1");
  EXPECT_TRUE(info->times.seekable());
  EXPECT_EQ(info->times.keys, (std::vector<int64_t>{0, 25, 50}));
}

// A seek lands on exactly the frame decoding from the start gives that
// number, pixel for pixel, wherever the reader was: ahead of it, behind
// it, on it, right before it; and decoding from the key frame at or before
// it rather than from the start.
TEST_F(RecordedMovieTest, ASeekGivesTheFrameDecodingFromTheStartGives) {
  const std::string path = recorded("seek.mp4", 4, "", 30);
  Result<VideoInfo> info = probe(path);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_EQ(info->frame_count, 120);
  const std::vector<std::string> frames = every_frame(path);
  ASSERT_EQ(frames.size(), 120u);
  auto reader = FrameReader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  FrameReader& r = **reader;
  const std::vector<int64_t> order = {119, 118, 60, 59, 0, 1, 31, 30, 29, 90, 90, 91, 5, 100};
  for (const int64_t n : order) {
    const int64_t decoded_before = r.frames_decoded();
    Result<bool> found = r.seek(n, info->times, true);
    ASSERT_TRUE(found.ok()) << n << ": " << found.status().to_string();
    ASSERT_TRUE(*found) << n;
    EXPECT_EQ(r.frame(), n);
    EXPECT_EQ(r.time_us(), info->times.us(n)) << n;
    EXPECT_TRUE(pixels_of(r.image()) == frames[static_cast<size_t>(n)]) << "frame " << n;
    // At most from its key frame (30 frames apart), and a few the decoder
    // holds back for its B-frames.
    EXPECT_LE(r.frames_decoded() - decoded_before, n % 30 + 1 + 3) << n;
  }
  // next() goes on from a seek's frame.
  ASSERT_TRUE(*r.next(true));
  EXPECT_EQ(r.frame(), 101);
  EXPECT_TRUE(pixels_of(r.image()) == frames[101]);
  EXPECT_FALSE(*r.seek(120, info->times, true));
}

// A proxy has every frame of the movie, in order, looking as it does (a
// lossy copy), with a key frame every key_every frames whatever the
// movie's own (here one in 5 s): any frame of it is decoded after at most
// key_every - 1 others.
TEST_F(RecordedMovieTest, AProxyHasEveryFrameAndAKeyFrameEveryFew) {
  const std::string path = recorded("long_gop.mp4", 5, "", 150);
  Result<VideoInfo> info = probe(path);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_EQ(info->times.keys, (std::vector<int64_t>{0}));
  const std::vector<std::string> frames = every_frame(path);
  const std::string proxy_path = (dir_ / "proxy.mp4").string();
  Result<ProxyInfo> proxy = write_proxy(path, proxy_path, ProxyOptions{.key_every = 10});
  ASSERT_TRUE(proxy.ok()) << proxy.status().to_string();
  EXPECT_EQ(proxy->frames, 150);
  Result<VideoInfo> proxy_info = probe(proxy_path);
  ASSERT_TRUE(proxy_info.ok()) << proxy_info.status().to_string();
  const FrameTimes times = proxy_times(*proxy, 10);
  EXPECT_EQ(proxy_info->times.pts, times.pts);
  EXPECT_EQ(proxy_info->times.keys, times.keys);
  auto reader = FrameReader::open(proxy_path);
  ASSERT_TRUE(reader.ok());
  for (const int64_t n : {149, 148, 77, 3, 120, 0, 59}) {
    const int64_t before = (*reader)->frames_decoded();
    ASSERT_TRUE(*(*reader)->seek(n, times, true)) << n;
    EXPECT_LE((*reader)->frames_decoded() - before, 10) << n;
    // Within a few levels of the movie's frame, on average.
    const std::string got = pixels_of((*reader)->image());
    const std::string& want = frames[static_cast<size_t>(n)];
    ASSERT_EQ(got.size(), want.size());
    double diff = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      diff += std::abs(static_cast<int>(static_cast<uint8_t>(got[i])) -
                       static_cast<int>(static_cast<uint8_t>(want[i])));
    }
    EXPECT_LT(diff / static_cast<double>(got.size()), 3.0) << "frame " << n;
  }
  EXPECT_EQ(write_proxy(path, proxy_path, ProxyOptions{.key_every = 0}).status().code(),
            Code::kInvalidArgument);
}

// A reader that keeps its last frames goes back to one of them without
// decoding (a page stepping back), and on from it through the others, then
// decodes again past the last it decoded.
TEST_F(RecordedMovieTest, SteppingBackThroughKeptFramesDecodesNothing) {
  const std::string path = recorded("kept.mp4", 3, "", 90);
  Result<VideoInfo> info = probe(path);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  const std::vector<std::string> frames = every_frame(path);
  auto reader = FrameReader::open(path, VideoLimits{.frames_kept = 16});
  ASSERT_TRUE(reader.ok());
  FrameReader& r = **reader;
  ASSERT_TRUE(*r.seek(40, info->times, true));
  const int64_t decoded = r.frames_decoded();
  for (int64_t n = 39; n >= 25; --n) {
    ASSERT_TRUE(*r.seek(n, info->times, true)) << n;
    EXPECT_EQ(r.frame(), n);
    EXPECT_EQ(r.time_us(), info->times.us(n));
    EXPECT_TRUE(pixels_of(r.image()) == frames[static_cast<size_t>(n)]) << "frame " << n;
  }
  EXPECT_EQ(r.frames_decoded(), decoded) << "the 15 frames before 40 were kept";
  for (int64_t n = 26; n <= 42; ++n) {
    ASSERT_TRUE(*r.next(true)) << n;
    EXPECT_EQ(r.frame(), n);
    EXPECT_TRUE(pixels_of(r.image()) == frames[static_cast<size_t>(n)]) << "frame " << n;
  }
  EXPECT_EQ(r.frames_decoded(), decoded + 2) << "41 and 42 decoded, the others replayed";
}

TEST_F(RecordedMovieTest, TimesThatDoNotMatchTheFileAreRefused) {
  const std::string path = recorded("other.mp4", 2, "", 30);
  Result<VideoInfo> info = probe(path);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  auto reader = FrameReader::open(path);
  ASSERT_TRUE(reader.ok());
  FrameTimes shifted = info->times;
  for (int64_t& pts : shifted.pts) pts += 1;
  EXPECT_EQ((*reader)->seek(40, shifted, true).status().code(), Code::kInvalidArgument);
  FrameTimes unordered = info->times;
  std::swap(unordered.pts[3], unordered.pts[4]);
  EXPECT_FALSE(unordered.seekable());
  EXPECT_EQ((*reader)->seek(40, unordered, true).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::tracer
