// The small synthetic movie the movies tests upload and trace: one spot
// moving on a known sub-pixel path. Tests only.
#pragma once

#include "tracer/synthetic_movie.h"

namespace leasehold::movies {

inline tracer::SyntheticMovie small_test_movie() {
  tracer::SyntheticMovie m;
  m.width = 96;
  m.height = 64;
  m.frames = 12;
  m.spots = {tracer::Spot{.x0_px = 30.2,
                          .y0_px = 30.7,
                          .vx_px_per_frame = 0.8,
                          .vy_px_per_frame = 0.3,
                          .amplitude_px = 0,
                          .period_frames = 50,
                          .radius_px = 6}};
  return m;
}

}  // namespace leasehold::movies
