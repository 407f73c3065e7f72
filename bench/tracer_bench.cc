// tracer_bench: the movie tracer against decoding alone, on one synthetic
// movie, in the same run (docs/benchmarks.md, "The tracer").
//
// It writes a movie (640x480, 300 frames, 4 spots by default) into a fresh
// temporary folder, then alternates, for --rounds rounds: decoding every
// frame with OpenCV alone (cv::VideoCapture::read, the frames converted to
// BGR as any OpenCV program gets them), and tracing every marker through
// every frame with tracer::trace() (which decodes the same frames itself).
// Each figure is the median of its rounds, in frames per second;
// trace_vs_decode is their ratio (goal >= 0.5). It also traces at
// --every frames (the frames between sampled ones are decoded, not
// converted), and checks the trace against the spots' true paths.
//
// Prints one JSON line on stdout; exits 1 if anything fails, 2 on bad flags.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpu_time.h"
#include "tracer/synthetic_movie.h"
#include "tracer/tracer.h"
#include "tracer/video.h"

namespace leasehold::tracer {
namespace {

struct Flags {
  int width = 640;
  int height = 480;
  int64_t frames = 300;
  int markers = 4;
  int rounds = 7;
  int64_t every = 5;
  std::string fourcc = "mp4v";
};

// Parses --name value pairs; returns false, having said why, on anything else.
bool parse(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; i += 2) {
    std::string_view name = argv[i];
    if (i + 1 >= argc) {
      fmt::print(stderr, "tracer_bench: {} needs a value\n", name);
      return false;
    }
    std::string value = argv[i + 1];
    char* end = nullptr;
    long long number = std::strtoll(value.c_str(), &end, 10);
    bool numeric = end != value.c_str() && *end == '\0';
    auto in = [&](long long low, long long high) {
      return numeric && number >= low && number <= high;
    };
    if (name == "--width" && in(64, 4096) && number % 2 == 0) {
      flags.width = static_cast<int>(number);
    } else if (name == "--height" && in(64, 4096) && number % 2 == 0) {
      flags.height = static_cast<int>(number);
    } else if (name == "--frames" && in(3, 100'000)) {
      flags.frames = number;
    } else if (name == "--markers" && in(1, 64)) {
      flags.markers = static_cast<int>(number);
    } else if (name == "--rounds" && in(1, 100)) {
      flags.rounds = static_cast<int>(number);
    } else if (name == "--every" && in(1, 1000)) {
      flags.every = number;
    } else if (name == "--fourcc" && value.size() == 4) {
      flags.fourcc = value;
    } else {
      fmt::print(stderr,
                 "tracer_bench: bad flag {} {} (--width/--height 64..4096 even, --frames "
                 "3..100000, --markers 1..64, --rounds 1..100, --every 1..1000, --fourcc CODE)\n",
                 name, value);
      return false;
    }
  }
  return true;
}

// Spots spread over the frame on a grid, each drifting and circling so that
// it stays in its own cell.
SyntheticMovie movie_for(const Flags& flags) {
  SyntheticMovie m;
  m.width = flags.width;
  m.height = flags.height;
  m.frames = flags.frames;
  m.fourcc = flags.fourcc;
  int columns = static_cast<int>(std::ceil(std::sqrt(flags.markers)));
  int rows = (flags.markers + columns - 1) / columns;
  for (int i = 0; i < flags.markers; ++i) {
    double cell_w = static_cast<double>(flags.width) / columns;
    double cell_h = static_cast<double>(flags.height) / rows;
    double x = (i % columns + 0.5) * cell_w, y = (i / columns + 0.5) * cell_h;
    double drift = std::min(cell_w, cell_h) / 4 / static_cast<double>(flags.frames);
    m.spots.push_back(Spot{.x0_px = x - 0.37,
                           .y0_px = y + 0.21,
                           .vx_px_per_frame = drift,
                           .vy_px_per_frame = -drift / 2,
                           .amplitude_px = 6,
                           .period_frames = 40 + 7.0 * i,
                           .radius_px = 8});
  }
  return m;
}

// Wall time and the CPU time of the whole process (FFmpeg's decoding
// threads included), from construction.
class Stopwatch {
 public:
  // Frames per second of wall time, and per second of CPU time.
  std::pair<double, double> rates(int64_t frames) const {
    double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
    double cpu_s = std::chrono::duration<double>(process_cpu_time() - cpu_start_).count();
    return {static_cast<double>(frames) / wall_s, static_cast<double>(frames) / cpu_s};
  }

 private:
  std::chrono::steady_clock::time_point wall_start_ = std::chrono::steady_clock::now();
  Duration cpu_start_ = process_cpu_time();
};

struct Rates {
  double fps = 0;      // frames of the movie per second, sampled or not
  double cpu_fps = 0;  // the same per second of CPU time
};

// Decodes every frame with OpenCV alone.
Result<Rates> decode_only(const std::string& path, int64_t frames) {
  Stopwatch watch;
  cv::VideoCapture capture(path, cv::CAP_FFMPEG);
  cv::Mat frame;
  int64_t decoded = 0;
  while (capture.read(frame)) ++decoded;
  auto [fps, cpu_fps] = watch.rates(decoded);
  if (decoded != frames) {
    return internal_error(fmt::format("decoded {} frames of {}", decoded, frames));
  }
  return Rates{fps, cpu_fps};
}

struct TraceRun {
  Rates rates;
  double error_sum_px = 0;
  int64_t rows = 0;
  int64_t lost = 0;
};

Result<TraceRun> trace_once(const std::string& path, const VideoInfo& info, const SyntheticMovie& m,
                            int64_t every) {
  TraceRequest request;
  request.trim = {0, info.frame_count - 1};
  request.every_frames = every;
  for (size_t i = 0; i < m.spots.size(); ++i) {
    SpotPosition at = spot_position(m.spots[i], 0);
    request.markers.push_back(Marker{fmt::format("m{}", i), "", 0, at.x, at.y});
  }
  TraceRun run;
  Stopwatch watch;
  Status traced = trace(path, info, request, [&](const TracedFrame& frame) {
    for (size_t i = 0; i < frame.rows.size(); ++i) {
      const TrackRow& row = frame.rows[i];
      SpotPosition truth = spot_position(m.spots[i], row.frame);
      run.error_sum_px += std::hypot(row.x - truth.x, row.y - truth.y);
      ++run.rows;
      if (row.status == TrackStatus::kLost) ++run.lost;
    }
    return Status();
  });
  // The tracer decodes up to the trim's last sampled frame.
  auto [fps, cpu_fps] = watch.rates((info.frame_count - 1) / every * every + 1);
  LEASEHOLD_RETURN_IF_ERROR(traced);
  run.rates = {fps, cpu_fps};
  return run;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The median of each rate on its own.
Rates median(const std::vector<Rates>& runs) {
  std::vector<double> fps, cpu_fps;
  for (const Rates& r : runs) {
    fps.push_back(r.fps);
    cpu_fps.push_back(r.cpu_fps);
  }
  return {median(fps), median(cpu_fps)};
}

Status run(const Flags& flags) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              fmt::format("tracer_bench_{}", std::random_device{}());
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  std::string path =
      (dir / (flags.fourcc == "MJPG" || flags.fourcc == "XVID" ? "movie.avi" : "movie.mp4"))
          .string();
  SyntheticMovie m = movie_for(flags);
  LEASEHOLD_RETURN_IF_ERROR(write_synthetic_movie(path, m));
  LEASEHOLD_ASSIGN_OR_RETURN(VideoInfo info, probe(path));

  // Decoding, tracing every frame and tracing every --every frames take
  // turns, so that a change in the machine's speed hits them alike.
  std::vector<Rates> decode, all, sparse;
  TraceRun all_run, sparse_run;
  for (int round = 0; round < flags.rounds; ++round) {
    LEASEHOLD_ASSIGN_OR_RETURN(Rates decoded, decode_only(path, info.frame_count));
    decode.push_back(decoded);
    LEASEHOLD_ASSIGN_OR_RETURN(all_run, trace_once(path, info, m, 1));
    all.push_back(all_run.rates);
    LEASEHOLD_ASSIGN_OR_RETURN(sparse_run, trace_once(path, info, m, flags.every));
    sparse.push_back(sparse_run.rates);
  }
  Rates d = median(decode), a = median(all), s = median(sparse);
  fmt::print(
      "{{\"bench\":\"tracer\",\"width\":{},\"height\":{},\"frames\":{},\"markers\":{},"
      "\"codec\":\"{}\",\"rounds\":{},\"decode_fps\":{:.0f},\"trace_fps\":{:.0f},"
      "\"trace_vs_decode\":{:.3f},\"decode_cpu_fps\":{:.0f},\"trace_cpu_fps\":{:.0f},"
      "\"trace_vs_decode_cpu\":{:.3f},\"every\":{},\"trace_every_fps\":{:.0f},"
      "\"trace_every_vs_decode\":{:.3f},\"trace_every_vs_decode_cpu\":{:.3f},\"mean_error_px\":{:."
      "3f},\"lost_rows\":{}}}\n",
      info.width, info.height, info.frame_count, flags.markers, flags.fourcc, flags.rounds, d.fps,
      a.fps, a.fps / d.fps, d.cpu_fps, a.cpu_fps, a.cpu_fps / d.cpu_fps, flags.every, s.fps,
      s.fps / d.fps, s.cpu_fps / d.cpu_fps,
      all_run.error_sum_px / static_cast<double>(all_run.rows), all_run.lost + sparse_run.lost);
  return Status();
}

}  // namespace
}  // namespace leasehold::tracer

int main(int argc, char** argv) {
  leasehold::tracer::Flags flags;
  if (!leasehold::tracer::parse(argc, argv, flags)) return 2;
  leasehold::Status status = leasehold::tracer::run(flags);
  if (!status.ok()) {
    fmt::print(stderr, "tracer_bench: {}\n", status.to_string());
    return 1;
  }
  return 0;
}
