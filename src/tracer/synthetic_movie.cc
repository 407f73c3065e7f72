// Synthetic movies (tracer/synthetic_movie.h): checked here, drawn and
// encoded by the codecs module (tracer/movie_writer.cc).
#include "tracer/synthetic_movie.h"

#include <fmt/format.h>

#include "tracer/codecs.h"

namespace leasehold::tracer {
namespace {

Status validate_movie(const SyntheticMovie& movie) {
  if (movie.width < 16 || movie.height < 16 || movie.width > kSyntheticSideMaxPx ||
      movie.height > kSyntheticSideMaxPx || movie.width % 2 != 0 || movie.height % 2 != 0) {
    return invalid_argument(
        fmt::format("a synthetic movie's sides must be even, 16..{} px", kSyntheticSideMaxPx));
  }
  if (movie.frames < 1 || movie.frames > kSyntheticFramesMax) {
    return invalid_argument(fmt::format("a synthetic movie has 1..{} frames", kSyntheticFramesMax));
  }
  if (!(movie.fps > 0 && movie.fps <= 1000) || movie.fourcc.size() != 4 ||
      !(movie.noise_grey >= 0 && movie.noise_grey <= 64)) {
    return invalid_argument(
        "a synthetic movie needs 0 < fps <= 1000, a four-character code and "
        "noise of 0..64 grey levels");
  }
  for (const Spot& spot : movie.spots) {
    if (spot.radius_px < 3 || spot.radius_px > 64 || !(spot.period_frames > 0)) {
      return invalid_argument("a spot's radius is 3..64 px and its period positive");
    }
  }
  for (const Cover& cover : movie.covers) {
    if (cover.spot >= movie.spots.size()) return invalid_argument("a cover names no spot");
  }
  return Status();
}

}  // namespace

Status write_synthetic_movie(const std::string& path, const SyntheticMovie& movie) {
  LEASEHOLD_RETURN_IF_ERROR(validate_movie(movie));
  LEASEHOLD_ASSIGN_OR_RETURN(const codecs::Codecs* codecs, codecs::load());
  return codecs->write_movie(path, movie);
}

}  // namespace leasehold::tracer
