// JPEG images of decoded frames (tracer/video.h), for pages that show a
// movie's exact frames. Encoded by OpenCV's image codecs, which are compiled
// in jpeg.cc only.
//
// Threads: encode_jpeg() may be called from any thread.
#pragma once

#include <string>

#include "leasehold/status.h"
#include "tracer/video.h"

namespace leasehold::tracer {

inline constexpr int kJpegQualityDefault = 90;

// `image` as a baseline JPEG of `quality` (1..100, the codec's scale):
// colour for 3 channels (blue, green, red), grey for 1. kInvalidArgument for
// an image without pixels, with another number of channels or a quality out
// of range; kInternal if the codec fails.
Result<std::string> encode_jpeg(const FrameImage& image, int quality = kJpegQualityDefault);

}  // namespace leasehold::tracer
