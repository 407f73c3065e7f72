// The parts of the codecs module (libleasehold_codecs.so, tracer/codecs.h),
// which only the module links: the binaries reach them through the table
// that load() returns.
#pragma once

#include <memory>
#include <string>

#include "tracer/codecs.h"

namespace leasehold::tracer::codecs {

// video_decoder.cc
Result<std::unique_ptr<Decoder>> open_video(const std::string& path, const VideoLimits& limits);
// jpeg_encoder.cc
Result<std::string> encode_jpeg(const FrameImage& image, int quality);
// movie_writer.cc
Status write_movie(const std::string& path, const SyntheticMovie& movie);
// proxy_writer.cc
Result<ProxyInfo> write_proxy(const std::string& path, const std::string& out,
                              const ProxyOptions& options, const VideoLimits& limits,
                              std::stop_token stop);

}  // namespace leasehold::tracer::codecs
