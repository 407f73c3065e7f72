// The small synthetic movie the movies tests upload and trace: one spot
// moving on a known sub-pixel path, and a movie of it ready to trace. Tests
// only.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "movies/media.h"
#include "movies/movies.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::movies {

// The media folder `dir` (which must exist) as the tests' MediaStore.
inline std::unique_ptr<MediaStore> folder_media(const std::filesystem::path& dir) {
  Result<std::unique_ptr<MediaStore>> media = open_media(dir.string());
  EXPECT_TRUE(media.ok()) << media.status().to_string();
  return media.ok() ? std::move(media).value() : nullptr;
}

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

// A probed movie of `file` (in the media folder) with one marker on the
// spot at frame 0, its analysis lease held by `user` (the lease ID in
// *lease_id): ready to trace every frame. Each step is expected to succeed.
inline std::string movie_with_marker(Movies& movies, const User& user, const std::string& file,
                                     std::string* lease_id) {
  auto created = movies.create("spots", user, file);
  EXPECT_TRUE(created.ok()) << created.status().to_string();
  if (!created.ok()) return "";
  EXPECT_TRUE(movies.probe(created->id).ok());
  auto lease = movies.acquire_analysis(created->id, user);
  EXPECT_TRUE(lease.ok()) << lease.status().to_string();
  if (!lease.ok()) return created->id;
  const auto at = tracer::spot_position(small_test_movie().spots[0], 0);
  EXPECT_TRUE(movies
                  .set_markers(created->id, user.name, lease->lease_id,
                               {tracer::Marker{"m1", "spot", 0, at.x, at.y}})
                  .ok());
  *lease_id = lease->lease_id;
  return created->id;
}

}  // namespace leasehold::movies
