// make_test_movie PATH [FRAMES [WIDTH HEIGHT [FOURCC]]]: writes a synthetic
// movie (tracer/synthetic_movie.h) with one spot moving on a known path, for
// the process and browser tests that upload and trace movies, and prints
// one JSON line: the movie's frames, size and fps, and the spot's position
// on frame 0 ({"x", "y"}), where a test places its marker. The spot stays
// inside the frame however many frames there are.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tracer/synthetic_movie.h"

int main(int argc, char** argv) {
  using leasehold::tracer::SyntheticMovie;
  if (argc < 2 || argc > 6) {
    std::fprintf(stderr, "usage: make_test_movie PATH [FRAMES [WIDTH HEIGHT [FOURCC]]]\n");
    return 2;
  }
  SyntheticMovie m;
  m.frames = argc > 2 ? std::atoll(argv[2]) : 30;
  if (argc > 4) {
    m.width = std::atoi(argv[3]);
    m.height = std::atoi(argv[4]);
  }
  if (argc > 5) m.fourcc = argv[5];
  // Across 40 % of the width and 20 % of the height over the movie, so
  // that the spot stays in the frame however long the movie is.
  const double frames = static_cast<double>(std::max<int64_t>(m.frames, 1));
  m.spots = {leasehold::tracer::Spot{.x0_px = m.width * 0.3 + 0.2,
                                     .y0_px = m.height * 0.45 + 0.7,
                                     .vx_px_per_frame = 0.4 * m.width / frames,
                                     .vy_px_per_frame = 0.2 * m.height / frames,
                                     .amplitude_px = 3,
                                     .period_frames = 60,
                                     .radius_px = 6}};
  const leasehold::Status written = leasehold::tracer::write_synthetic_movie(argv[1], m);
  if (!written.ok()) {
    std::fprintf(stderr, "make_test_movie: %s\n", written.to_string().c_str());
    return 1;
  }
  const auto at = leasehold::tracer::spot_position(m.spots[0], 0);
  std::printf("{\"frames\":%lld,\"width\":%d,\"height\":%d,\"fps\":%g,\"x\":%.6f,\"y\":%.6f}\n",
              static_cast<long long>(m.frames), m.width, m.height, m.fps, at.x, at.y);
  return 0;
}
