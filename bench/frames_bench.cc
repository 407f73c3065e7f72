// frames_bench: how fast the Analyze page's frame images come (the work of
// GET /api/movies/{id}/frames/{n}.jpg: movies::FrameCache decoding a frame
// and encoding its JPEG), on a long movie as phones and cameras write them,
// three ways in the same run (docs/benchmarks.md, "Frames of long movies"):
//   start     the route as it was: frames counted from the first frame, a
//             frame behind every open reader decoded from the start
//   keyframe  the movie's own file, from the key frame at or before the frame
//             (FrameReader::seek() with the movie's frame times)
//   proxy     the movie's proxy (tracer::write_proxy(): a key frame every 4)
// For each: random frames (p50, p99), the next frame after one shown, and
// the previous one (stepping back), each a frame not asked for before.
//
// The movie is made with the ffmpeg command (testsrc2, a key frame every
// --gop frames, H.264 or HEVC) into --dir, and kept there for the next run.
// Prints one JSON line on stdout; exits 1 if anything fails, 2 on bad flags.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "movies/frame_images.h"
#include "movies/media.h"
#include "tracer/video.h"

namespace leasehold::movies {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string dir;
  std::string codec = "h264";  // or hevc
  int seconds = 600;
  int width = 1920;
  int height = 1080;
  int gop = 300;  // 10 s at 30 fps
  int random = 40;
  int start_random = 5;  // the old route decodes half the movie a frame: fewer
  int steps = 20;
};

bool parse(int argc, char** argv, Flags& f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    const std::string value = argv[i + 1];
    const int number = std::atoi(value.c_str());
    if (name == "--dir") f.dir = value;
    else if (name == "--codec" && (value == "h264" || value == "hevc")) f.codec = value;
    else if (name == "--seconds" && number > 0) f.seconds = number;
    else if (name == "--width" && number > 0 && number % 2 == 0) f.width = number;
    else if (name == "--height" && number > 0 && number % 2 == 0) f.height = number;
    else if (name == "--gop" && number > 0) f.gop = number;
    else if (name == "--random" && number > 0) f.random = number;
    else if (name == "--start-random" && number > 0) f.start_random = number;
    else if (name == "--steps" && number > 0) f.steps = number;
    else {
      fmt::print(stderr, "frames_bench: bad flag {} {}\n", name, value);
      return false;
    }
  }
  if (argc % 2 == 0 || f.dir.empty()) {
    fmt::print(stderr, "frames_bench: --dir DIR [--codec h264|hevc] [--seconds N] [--width W] "
                       "[--height H] [--gop N] [--random N] [--start-random N] [--steps N]\n");
    return false;
  }
  return true;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Nearest rank.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string stats(const std::vector<double>& v) {
  return fmt::format(R"({{"n":{},"p50_ms":{:.1f},"p99_ms":{:.1f},"max_ms":{:.1f}}})", v.size(),
                     percentile(v, 0.5), percentile(v, 0.99), percentile(v, 1.0));
}

struct Timings {
  std::vector<double> random, next, previous;
};

// One way of reading: `file` in the folder, with `times` (or none).
Timings measure(FrameCache& cache, const std::string& id, const std::string& file,
                const tracer::FrameTimes* times, int64_t frames, int randoms, int steps,
                std::mt19937& rng, bool& failed) {
  Timings t;
  const auto get = [&](int64_t n, std::vector<double>& into) {
    const Clock::time_point start = Clock::now();
    const Result<std::string> path = cache.jpeg(id, file, n, times);
    into.push_back(ms_since(start));
    if (!path.ok()) {
      fmt::print(stderr, "frames_bench: {} frame {}: {}\n", id, n, path.status().to_string());
      failed = true;
    }
  };
  std::uniform_int_distribution<int64_t> any(steps + 1, frames - steps - 2);
  for (int i = 0; i < randoms; ++i) get(any(rng), t.random);
  // Forward from a frame shown, then back from another, as the page steps.
  const int64_t from = any(rng);
  get(from, t.random);
  for (int i = 1; i <= steps; ++i) get(from + i, t.next);
  const int64_t back = any(rng);
  get(back, t.random);
  for (int i = 1; i <= steps; ++i) get(back - i, t.previous);
  return t;
}

int run(const Flags& flags) {
  fs::create_directories(flags.dir);
  const std::string name = fmt::format("{}-{}x{}-{}s-gop{}.mp4", flags.codec, flags.width,
                                       flags.height, flags.seconds, flags.gop);
  const fs::path movie = fs::path(flags.dir) / name;
  if (!fs::exists(movie)) {
    const std::string encoder =
        flags.codec == "h264"
            ? fmt::format("-c:v libx264 -preset ultrafast -g {0} -keyint_min {0} -sc_threshold 0",
                          flags.gop)
            : fmt::format("-c:v libx265 -preset ultrafast -x265-params "
                          "keyint={0}:min-keyint={0}:scenecut=0:log-level=error",
                          flags.gop);
    const std::string command = fmt::format(
        "ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size={}x{}:rate=30 -t {} {} "
        "-pix_fmt yuv420p '{}.part.mp4' && mv '{}.part.mp4' '{}'",
        flags.width, flags.height, flags.seconds, encoder, movie.string(), movie.string(),
        movie.string());
    fmt::print(stderr, "frames_bench: making {}\n", movie.string());
    if (std::system(command.c_str()) != 0) {
      fmt::print(stderr, "frames_bench: ffmpeg failed: {}\n", command);
      return 1;
    }
  }
  Clock::time_point start = Clock::now();
  const Result<tracer::VideoInfo> info = tracer::probe(movie.string());
  if (!info.ok()) {
    fmt::print(stderr, "frames_bench: {}\n", info.status().to_string());
    return 1;
  }
  const double probe_s = ms_since(start) / 1000;
  const std::string proxy_name = name + ".proxy.mp4";
  start = Clock::now();
  const Result<tracer::ProxyInfo> proxy =
      tracer::write_proxy(movie.string(), (fs::path(flags.dir) / proxy_name).string());
  if (!proxy.ok()) {
    fmt::print(stderr, "frames_bench: {}\n", proxy.status().to_string());
    return 1;
  }
  const double proxy_s = ms_since(start) / 1000;
  const tracer::FrameTimes proxy_times = tracer::proxy_times(*proxy, tracer::ProxyOptions{}.key_every);

  Result<std::unique_ptr<MediaStore>> media = open_media(flags.dir);
  if (!media.ok()) {
    fmt::print(stderr, "frames_bench: {}\n", media.status().to_string());
    return 1;
  }
  std::error_code ec;
  fs::remove_all(fs::path(flags.dir) / kFrameCacheFolder, ec);
  Result<std::unique_ptr<FrameCache>> cache = FrameCache::open({.media = media->get()});
  if (!cache.ok()) return 1;
  std::mt19937 rng(42);
  bool failed = false;
  const int64_t frames = info->frame_count;
  fmt::print(stderr, "frames_bench: {} frames; start\n", frames);
  // Each of its steps back decodes from the first frame: as few as its
  // random frames.
  const Timings before = measure(**cache, "start", name, nullptr, frames, flags.start_random,
                                 std::min(flags.steps, flags.start_random), rng, failed);
  fmt::print(stderr, "frames_bench: keyframe\n");
  const Timings keyframe = measure(**cache, "keyframe", name, &info->times, frames, flags.random,
                                   flags.steps, rng, failed);
  fmt::print(stderr, "frames_bench: proxy\n");
  const Timings proxied = measure(**cache, "proxy", proxy_name, &proxy_times, frames,
                                  flags.random, flags.steps, rng, failed);
  fs::remove_all(fs::path(flags.dir) / kFrameCacheFolder, ec);
  const auto way = [](const Timings& t) {
    return fmt::format(R"({{"random":{},"next":{},"previous":{}}})", stats(t.random),
                       stats(t.next), stats(t.previous));
  };
  const bool met = percentile(proxied.random, 0.99) <= 150 &&
                   percentile(proxied.next, 0.99) <= 30 && percentile(proxied.previous, 0.99) <= 30;
  fmt::print(
      R"({{"bench":"frames","codec":"{}","width":{},"height":{},"frames":{},"gop":{},)"
      R"("movie_mb":{:.0f},"proxy_mb":{:.0f},"probe_s":{:.1f},"proxy_s":{:.1f},)"
      R"("start":{},"keyframe":{},"proxy":{},"goal":"proxy p99 random <= 150 ms, next and previous <= 30 ms","met":{}}})"
      "\n",
      flags.codec, flags.width, flags.height, frames, flags.gop,
      static_cast<double>(fs::file_size(movie)) / 1e6,
      static_cast<double>(fs::file_size(fs::path(flags.dir) / proxy_name)) / 1e6, probe_s, proxy_s,
      way(before), way(keyframe), way(proxied), met);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace leasehold::movies

int main(int argc, char** argv) {
  leasehold::movies::Flags flags;
  if (!leasehold::movies::parse(argc, argv, flags)) return 2;
  return leasehold::movies::run(flags);
}
