// FrameCache (movies/frame_images.h) on synthetic movies whose spot moves
// several pixels a frame: each image is decoded back and its spot found
// where spot_position() puts it on that frame (a neighbouring frame's spot
// is too far to pass), in the containers and codecs the server takes.
// Decodes are counted to show that stepping forward reuses the reader and a
// frame behind it starts over; the size bound holds, also across a restart;
// many threads at once get exact frames within the reader bound.
#include "movies/frame_images.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "movies/test_movie.h"
#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"
#include "tracer/video.h"

namespace leasehold::movies {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kFrames = 24;

tracer::SyntheticMovie fast_movie(const std::string& fourcc) {
  tracer::SyntheticMovie m;
  m.width = 160;
  m.height = 120;
  m.frames = kFrames;
  m.fourcc = fourcc;
  // 3.4 px a frame: a spot found within 1.5 px of where it should be is on
  // its own frame, not a neighbour.
  m.spots = {tracer::Spot{.x0_px = 20.3,
                          .y0_px = 30.6,
                          .vx_px_per_frame = 3.1,
                          .vy_px_per_frame = 1.4,
                          .amplitude_px = 0,
                          .period_frames = 50,
                          .radius_px = 7}};
  return m;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Where the spot of the JPEG at `path` is: the best match of the spot's own
// pattern (a bright disc with a dark ring, as synthetic_movie.cc draws it,
// of `radius_px`) over the grey image, to the nearest pixel.
std::optional<cv::Point> spot_in(const std::string& path, int radius_px) {
  const std::string bytes = read_bytes(path);
  const cv::Mat image = cv::imdecode(
      cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data())),
      cv::IMREAD_GRAYSCALE);
  if (image.empty()) return std::nullopt;
  const int half = radius_px + 2;
  cv::Mat pattern(2 * half + 1, 2 * half + 1, CV_32F, cv::Scalar(0));
  for (int y = -half; y <= half; ++y) {
    for (int x = -half; x <= half; ++x) {
      const double d = std::hypot(x, y);
      const bool ring = d >= 0.45 * radius_px && d <= 0.75 * radius_px;
      pattern.at<float>(y + half, x + half) = d > radius_px ? 0.5f : ring ? 0.f : 1.f;
    }
  }
  cv::Mat grey;
  image.convertTo(grey, CV_32F);
  cv::Mat score;
  cv::matchTemplate(grey, pattern, score, cv::TM_CCOEFF_NORMED);
  cv::Point at;
  cv::minMaxLoc(score, nullptr, nullptr, nullptr, &at);
  return cv::Point(at.x + half, at.y + half);
}

// True if the image at `path` shows frame `frame` of `movie`.
::testing::AssertionResult shows_frame(const std::string& path, const tracer::SyntheticMovie& movie,
                                       int64_t frame) {
  const std::optional<cv::Point> found = spot_in(path, movie.spots[0].radius_px);
  if (!found) return ::testing::AssertionFailure() << path << " is not a JPEG";
  const tracer::SpotPosition want = tracer::spot_position(movie.spots[0], frame);
  const double off = std::hypot(found->x - want.x, found->y - want.y);
  if (off > 1.5) {
    return ::testing::AssertionFailure()
           << "frame " << frame << ": spot at (" << found->x << ", " << found->y << "), expected ("
           << want.x << ", " << want.y << ")";
  }
  return ::testing::AssertionSuccess();
}

class FrameCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<leasehold::testing::TempDir>("frame_images_test_");
    media_ = tmp_->path();
    for (const auto& [file, fourcc] : kMovies) {
      ASSERT_TRUE(tracer::write_synthetic_movie((media_ / file).string(), fast_movie(fourcc)).ok())
          << file;
    }
  }
  static void TearDownTestSuite() {
    store_.reset();
    tmp_.reset();
  }
  void TearDown() override { fs::remove_all(media_ / kFrameCacheFolder); }

  static std::unique_ptr<FrameCache> open_cache(FrameCacheOptions o = {}) {
    if (!store_) store_ = folder_media(media_);
    o.media = store_.get();
    auto cache = FrameCache::open(std::move(o));
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    return cache.ok() ? std::move(cache).value() : nullptr;
  }

  // The images on disk, and their total size.
  static std::pair<size_t, uint64_t> on_disk() {
    std::pair<size_t, uint64_t> out;
    if (!fs::exists(media_ / kFrameCacheFolder)) return out;
    for (const auto& e : fs::recursive_directory_iterator(media_ / kFrameCacheFolder)) {
      if (!e.is_regular_file()) continue;
      ++out.first;
      out.second += e.file_size();
    }
    return out;
  }

  static inline const std::vector<std::pair<std::string, std::string>> kMovies = {
      {"mjpg.avi", "MJPG"}, {"mp4v.mp4", "mp4v"}, {"h264.mp4", "avc1"}};
  static inline std::unique_ptr<leasehold::testing::TempDir> tmp_;
  static inline fs::path media_;
  static inline std::unique_ptr<MediaStore> store_;  // the folder media_
};

TEST_F(FrameCacheTest, EveryFrameIsTheExactFrameOfItsNumberInEveryContainer) {
  for (const auto& [file, fourcc] : kMovies) {
    auto cache = open_cache();
    ASSERT_TRUE(cache);
    for (int64_t n = 0; n < kFrames; ++n) {
      Result<std::string> path = cache->jpeg("m-" + fourcc, file, n);
      ASSERT_TRUE(path.ok()) << fourcc << " frame " << n << ": " << path.status().to_string();
      EXPECT_EQ(*path,
                frame_cache_dir(media_.string(), "m-" + fourcc) + "/" + std::to_string(n) + ".jpg");
      EXPECT_TRUE(shows_frame(*path, fast_movie(fourcc), n)) << fourcc;
    }
    // One reader went through the movie once.
    EXPECT_EQ(cache->stats().readers_opened, 1) << fourcc;
    EXPECT_EQ(cache->stats().frames_decoded, kFrames) << fourcc;
    // Past the end there is no frame, and nothing is written.
    EXPECT_EQ(cache->jpeg("m-" + fourcc, file, kFrames).status().code(), Code::kNotFound);
    EXPECT_FALSE(fs::exists(frame_cache_dir(media_.string(), "m-" + fourcc) + "/" +
                            std::to_string(kFrames) + ".jpg"));
  }
}

TEST_F(FrameCacheTest, SteppingForwardDecodesOneFrameAndAFrameBehindStartsOver) {
  const tracer::SyntheticMovie movie = fast_movie("avc1");
  auto cache = open_cache();
  ASSERT_TRUE(cache);
  const auto get = [&](int64_t n) {
    bool written = false;
    Result<std::string> path = cache->jpeg("m", "h264.mp4", n, nullptr, &written);
    EXPECT_TRUE(path.ok()) << path.status().to_string();
    EXPECT_TRUE(shows_frame(path.ok() ? *path : "", movie, n));
    return written;
  };
  EXPECT_TRUE(get(5));
  EXPECT_EQ(cache->stats().frames_decoded, 6);
  EXPECT_TRUE(get(6));
  EXPECT_EQ(cache->stats().frames_decoded, 7) << "the next frame decodes one frame";
  EXPECT_EQ(cache->stats().readers_opened, 1);

  EXPECT_TRUE(get(2));
  EXPECT_EQ(cache->stats().readers_opened, 2) << "behind every reader: a new one from the start";
  EXPECT_EQ(cache->stats().frames_decoded, 10);
  EXPECT_TRUE(get(7));
  EXPECT_EQ(cache->stats().frames_decoded, 11) << "the reader at 6 went on, not the one at 2";
  EXPECT_TRUE(get(3));
  EXPECT_EQ(cache->stats().frames_decoded, 12) << "and the one at 2 serves 3";
  EXPECT_EQ(cache->stats().readers_opened, 2);

  EXPECT_FALSE(get(5)) << "kept: served again without decoding";
  EXPECT_EQ(cache->stats().frames_decoded, 12);
  EXPECT_EQ(cache->stats().cache_hits, 1);
}

// With the movie's frame times, a frame behind the reader (a step back) or
// far ahead of it is decoded from the key frame at or before it, not from
// the first frame; the image is the same as decoding from the start gives.
// An H.264 movie with B-frames and a key frame every 30 frames, made with
// ffmpeg, as a camera writes them.
TEST_F(FrameCacheTest, WithItsTimesAFrameIsDecodedFromTheKeyFrameBeforeIt) {
  const std::string file = "gop30.mp4";
  const std::string command =
      "ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=160x120:rate=30 -t 5 "
      "-c:v libx264 -preset ultrafast -bf 2 -g 30 -pix_fmt yuv420p '" +
      (media_ / file).string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  Result<tracer::VideoInfo> info = tracer::probe((media_ / file).string());
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_EQ(info->frame_count, 150);
  // Every image decoded from the start, by a cache without the times.
  std::vector<std::string> expected;
  {
    auto plain = open_cache();
    ASSERT_TRUE(plain);
    for (int64_t n = 0; n < 150; ++n) {
      Result<std::string> path = plain->jpeg("plain", file, n);
      ASSERT_TRUE(path.ok()) << path.status().to_string();
      expected.push_back(read_bytes(*path));
    }
  }
  auto cache = open_cache();
  ASSERT_TRUE(cache);
  int64_t decoded = 0;
  // Stepping back from the end, then jumps.
  for (const int64_t n : {149, 148, 147, 120, 119, 61, 0, 100, 99, 31}) {
    Result<std::string> path = cache->jpeg("timed", file, n, &info->times);
    ASSERT_TRUE(path.ok()) << n << ": " << path.status().to_string();
    EXPECT_TRUE(read_bytes(*path) == expected[static_cast<size_t>(n)]) << "frame " << n;
    const int64_t now = cache->stats().frames_decoded;
    // From its key frame (or on from the frame before), and the few the
    // decoder holds for its B-frames.
    EXPECT_LE(now - decoded, n % 30 + 4) << "frame " << n;
    decoded = now;
  }
  EXPECT_EQ(cache->stats().readers_opened, 1) << "one reader seeks back and forth";
}

// A proxy's frames, asked for as a page asks (a run forward, a jump, its
// look-ahead out of order, a jump to the end), are each the frame of its
// number: a movie of variable rate, 2 s at 30 fps then 4 s at 10 fps.
TEST_F(FrameCacheTest, AProxysFramesComeInAnyOrder) {
  const std::string file = "vfr.mp4";
  const std::string command =
      "ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=30 -t 6 "
      "-vf \"select='lt(t,2)+gte(t,2)*not(mod(n,3))'\" -fps_mode passthrough -c:v libx264 "
      "-preset ultrafast -g 30 -pix_fmt yuv420p '" + (media_ / file).string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string proxy_file = "vfr-proxy.mp4";
  Result<tracer::ProxyInfo> proxy =
      tracer::write_proxy((media_ / file).string(), (media_ / proxy_file).string());
  ASSERT_TRUE(proxy.ok()) << proxy.status().to_string();
  ASSERT_EQ(proxy->frames, 100);
  const tracer::FrameTimes times = tracer::proxy_times(*proxy, tracer::ProxyOptions{}.key_every);
  auto cache = open_cache();
  ASSERT_TRUE(cache);
  for (const int64_t n : {30, 31, 32, 33, 34, 70, 72, 71, 73, 74, 99, 98, 0, 97, 60}) {
    Result<std::string> path = cache->jpeg("vfr", proxy_file, n, &times);
    ASSERT_TRUE(path.ok()) << n << ": " << path.status().to_string();
  }
}

TEST_F(FrameCacheTest, TheReadersAreBoundedAndTheLeastRecentlyUsedIsClosed) {
  auto cache = open_cache({.readers_max = 2});
  ASSERT_TRUE(cache);
  ASSERT_TRUE(cache->jpeg("a", "mjpg.avi", 3).ok());
  ASSERT_TRUE(cache->jpeg("b", "mp4v.mp4", 3).ok());
  ASSERT_TRUE(cache->jpeg("a", "mjpg.avi", 4).ok());  // a's reader is now the newer
  ASSERT_TRUE(cache->jpeg("c", "h264.mp4", 3).ok());  // closes b's
  EXPECT_EQ(cache->stats().readers_opened, 3);
  EXPECT_EQ(cache->stats().readers_open_max, 2u);
  ASSERT_TRUE(cache->jpeg("a", "mjpg.avi", 5).ok());
  EXPECT_EQ(cache->stats().readers_opened, 3) << "a's reader stayed open";
  ASSERT_TRUE(cache->jpeg("b", "mp4v.mp4", 4).ok());
  EXPECT_EQ(cache->stats().readers_opened, 4) << "b's was closed";
}

TEST_F(FrameCacheTest, TheImagesStayWithinTheirBoundAlsoAcrossARestart) {
  uint64_t one_image = 0;
  {
    auto probe = open_cache();
    ASSERT_TRUE(probe);
    ASSERT_TRUE(probe->jpeg("m", "mjpg.avi", 0).ok());
    one_image = on_disk().second;
    ASSERT_TRUE(probe->forget("m").ok());
    ASSERT_EQ(on_disk().first, 0u);
  }
  const uint64_t bound = 4 * one_image;
  auto cache = open_cache({.cache_bytes_max = bound});
  ASSERT_TRUE(cache);
  for (int64_t n = 0; n < kFrames; ++n) {
    ASSERT_TRUE(cache->jpeg("m", "mjpg.avi", n).ok());
    const auto [count, bytes] = on_disk();
    EXPECT_LE(bytes, bound) << "after frame " << n;
    EXPECT_EQ(bytes, cache->stats().image_bytes);
    EXPECT_EQ(count, cache->stats().images);
  }
  EXPECT_GE(on_disk().first, 2u);
  EXPECT_LT(on_disk().first, 8u);
  // The newest stay; frame 0 went and is made again.
  const std::string last =
      frame_cache_dir(media_.string(), "m") + "/" + std::to_string(kFrames - 1) + ".jpg";
  EXPECT_TRUE(fs::exists(last));
  bool written = false;
  ASSERT_TRUE(cache->jpeg("m", "mjpg.avi", 0, nullptr, &written).ok());
  EXPECT_TRUE(written);

  // A restart with a smaller bound counts what is kept, and a temporary
  // file a stopped process left is removed.
  cache.reset();
  const fs::path left_over = fs::path(frame_cache_dir(media_.string(), "m")) / ".9.jpg.1.tmp";
  std::ofstream(left_over) << "half an image";
  auto again = open_cache({.cache_bytes_max = 2 * one_image});
  ASSERT_TRUE(again);
  EXPECT_FALSE(fs::exists(left_over));
  EXPECT_LE(on_disk().second, 2 * one_image);
  EXPECT_EQ(on_disk().second, again->stats().image_bytes);
  EXPECT_TRUE(fs::exists(frame_cache_dir(media_.string(), "m") + "/0.jpg")) << "the newest";
}

TEST_F(FrameCacheTest, ManyThreadsAtOnceGetExactFramesWithinTheReaderBound) {
  auto cache = open_cache({.readers_max = 2});
  ASSERT_TRUE(cache);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<int64_t> frames(kFrames);
      std::iota(frames.begin(), frames.end(), 0);
      std::shuffle(frames.begin(), frames.end(), std::mt19937(t));
      const auto& [file, fourcc] = kMovies[t % 2];
      for (int64_t n : frames) {
        Result<std::string> path = cache->jpeg("m-" + fourcc, file, n);
        if (!path.ok()) {
          failures[t] = path.status().to_string();
          return;
        }
        if (auto shown = shows_frame(*path, fast_movie(fourcc), n); !shown) {
          failures[t] = shown.message();
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
  const FrameCacheStats stats = cache->stats();
  EXPECT_LE(stats.readers_open_max, 2u);
  EXPECT_EQ(stats.images_written, 2 * kFrames) << "each image made once";
  EXPECT_EQ(stats.cache_hits, kThreads * kFrames - 2 * kFrames);
}

TEST_F(FrameCacheTest, ForgetRemovesAMoviesImagesAndBadNamesAreRefused) {
  auto cache = open_cache();
  ASSERT_TRUE(cache);
  ASSERT_TRUE(cache->jpeg("a", "mjpg.avi", 1).ok());
  ASSERT_TRUE(cache->jpeg("b", "mjpg.avi", 1).ok());
  ASSERT_TRUE(cache->forget("a").ok());
  EXPECT_FALSE(fs::exists(frame_cache_dir(media_.string(), "a")));
  EXPECT_TRUE(fs::exists(frame_cache_dir(media_.string(), "b") + "/1.jpg"));
  EXPECT_EQ(cache->stats().images, 1u);
  EXPECT_TRUE(cache->forget("a").ok()) << "idempotent";
  for (const auto& [id, file] : std::vector<std::pair<std::string, std::string>>{
           {"", "mjpg.avi"}, {"..", "mjpg.avi"}, {"a/b", "mjpg.avi"}, {"a", "../mjpg.avi"}}) {
    EXPECT_EQ(cache->jpeg(id, file, 0).status().code(), Code::kInvalidArgument) << id << file;
  }
  EXPECT_EQ(cache->jpeg("a", "mjpg.avi", -1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(cache->jpeg("a", "nosuch.avi", 0).status().code(), Code::kNotFound);
  EXPECT_EQ(FrameCache::open({}).status().code(), Code::kInvalidArgument) << "no media";
  EXPECT_EQ(open_media((media_ / "nosuch").string()).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::movies
