// Synthetic movies with known motion, for the tracer's tests and benchmark
// (and for demos): round spots moving on sub-pixel paths over a textured
// background, encoded by OpenCV's FFmpeg backend with a lossy codec, so that
// what the tracer finds can be compared with where the spots really were.
//
// Each spot is a bright disc with a dark ring, drawn from its exact
// (sub-pixel) centre with anti-aliased edges. The background is smooth
// random texture from a seed; every frame adds its own sensor-like noise. A
// cover hides a spot under a flat grey square for a run of frames.
//
// Threads: write_synthetic_movie() may be called from any thread; FFmpeg
// encodes on threads of its own. It loads the tracer's codecs
// (tracer/codecs.h) on first use.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::tracer {

inline constexpr int kSyntheticSideMaxPx = 4096;
inline constexpr int64_t kSyntheticFramesMax = 100'000;

// A spot's centre on frame f:
//   x = x0 + vx * f + amplitude * sin(2 pi f / period)
//   y = y0 + vy * f + amplitude * cos(2 pi f / period)
struct Spot {
  double x0_px = 0;
  double y0_px = 0;
  double vx_px_per_frame = 0;
  double vy_px_per_frame = 0;
  double amplitude_px = 0;
  double period_frames = 50;  // > 0
  int radius_px = 8;          // 3..64
};

// Hides spot number `spot` on frames first_frame..last_frame.
struct Cover {
  size_t spot = 0;
  int64_t first_frame = 0;
  int64_t last_frame = 0;
};

struct SyntheticMovie {
  int width = 160;
  int height = 120;
  int64_t frames = 30;
  double fps = 25;
  // The codec's four-character code, as OpenCV's VideoWriter takes it:
  // "MJPG" (in .avi), "mp4v" (.mp4), "XVID" (.avi), "avc1" (.mp4, H.264).
  std::string fourcc = "MJPG";
  std::vector<Spot> spots;
  std::vector<Cover> covers;
  double noise_grey = 2;  // standard deviation of each frame's noise, in grey levels
  uint64_t seed = 1;
};

struct SpotPosition {
  double x = 0;
  double y = 0;
};

// Where `spot` is on frame `frame`, in the tracer's coordinates (the centre
// of the top-left pixel is (0, 0)).
inline SpotPosition spot_position(const Spot& spot, int64_t frame) {
  double f = static_cast<double>(frame);
  double phase = 2 * std::numbers::pi * f / spot.period_frames;
  return {spot.x0_px + spot.vx_px_per_frame * f + spot.amplitude_px * std::sin(phase),
          spot.y0_px + spot.vy_px_per_frame * f + spot.amplitude_px * std::cos(phase)};
}

// Writes `movie` to `path` (the extension chooses the container). Returns
// kInvalidArgument for a movie outside the limits above (sides of 16 px or
// more, even), and kUnavailable if FFmpeg cannot write it (a codec it lacks,
// or one the container does not take, a folder that is not writable).
Status write_synthetic_movie(const std::string& path, const SyntheticMovie& movie);

}  // namespace leasehold::tracer
