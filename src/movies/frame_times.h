// Each frame's time, as the probe read it from the movie's container
// (tracer::FrameTimes: timestamps and key frames), kept in the store's
// movie_times table: the movie's frame images seek with them, its pages
// show each frame's time and play frame-exactly with them.
//
// A movie's times are parts of at most kFramesPerTimesPart frames, one item
// each, sk the part's first frame (10 digits). A part holds its frames'
// timestamps (the first in full, the others as differences from the one
// before) and its key frames, as text packed (base/packed.h): a movie of a
// steady rate packs to a few dozen bytes a part, one whose rate jitters to
// some bytes a frame. The probe writes them before it marks the movie
// ready; they go with the movie.
#pragma once

#include <cstdint>
#include <string>

#include "leasehold/status.h"
#include "leasehold/store.h"
#include "tracer/video.h"

namespace leasehold::movies {

inline constexpr int64_t kFramesPerTimesPart = 20'000;

// Writes `times` (of a probed movie) as the times of movie `id`, replacing
// any part written before. kInvalidArgument if they are not a movie's times
// (no frame, or timestamps that go back).
Status write_frame_times(ItemStore& store, const std::string& id, const tracer::FrameTimes& times);

// The times written for movie `id`, which has `frame_count` frames.
// kNotFound if none were (a movie probed by an older build); kInternal if
// the parts are damaged or do not add up to `frame_count` frames.
Result<tracer::FrameTimes> read_frame_times(ItemStore& store, const std::string& id,
                                            int64_t frame_count);

}  // namespace leasehold::movies
