// The frame times of a movie (movies/frame_times_internal.h), one part's
// text as it is read back from the store once unpacked.
//
// Input: a part's text ("v1 NUM DEN FIRST COUNT\nPTS...\nKEYS...\n"), read
// as the first part of a movie.
// Properties: a part taken has COUNT timestamps and key frames in order
// within it; written again with part_text() it reads back the same times.
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "movies/frame_times_internal.h"

namespace {

namespace movies = leasehold::movies;
namespace tracer = leasehold::tracer;
using leasehold::fuzz::escaped;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tracer::FrameTimes times;
  if (!movies::parse_part(text, times)) return 0;
  FUZZ_CHECK(!times.pts.empty() && times.time_base_num > 0 && times.time_base_den > 0,
             "a part taken without frames or time base: " + escaped(text));
  for (size_t i = 0; i < times.keys.size(); ++i) {
    FUZZ_CHECK(times.keys[i] >= 0 && times.keys[i] < static_cast<int64_t>(times.pts.size()) &&
                   (i == 0 || times.keys[i] > times.keys[i - 1]),
               "key frames out of order or range: " + escaped(text));
  }
  size_t key_at = 0;
  const std::string written =
      movies::part_text(times, 0, static_cast<int64_t>(times.pts.size()), key_at);
  FUZZ_CHECK_EQ(key_at, times.keys.size(), "the key frames written");
  tracer::FrameTimes again;
  FUZZ_CHECK(movies::parse_part(written, again),
             "part_text's text is refused: " + escaped(written));
  FUZZ_CHECK(again.pts == times.pts && again.keys == times.keys &&
                 again.time_base_num == times.time_base_num &&
                 again.time_base_den == times.time_base_den,
             "the part written as " + escaped(written) + " reads back otherwise");
  return 0;
}
