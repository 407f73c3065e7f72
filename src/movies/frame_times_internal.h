// The text of one part of a movie's frame times (frame_times.h), before it
// is packed: exposed for the fuzz target of the parts' parser
// (fuzz/frame_times_fuzz.cc). Private to movies/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tracer/video.h"

namespace leasehold::movies {

// "v1 NUM DEN FIRST COUNT\nPTS D D D...\nKEY D D...\n": the part of `t` of
// frames FIRST .. FIRST + COUNT - 1, their timestamps (the first in full,
// then differences), and its key frames (likewise), from t.keys[key_at] on;
// key_at is left at the first key frame past the part.
std::string part_text(const tracer::FrameTimes& t, int64_t first, int64_t count, size_t& key_at);

// Appends the part `text` to `out`, whose frames so far end where it must
// start. False if it is not such a part.
bool parse_part(std::string_view text, tracer::FrameTimes& out);

}  // namespace leasehold::movies
