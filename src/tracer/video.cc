// FrameReader and probe() (tracer/video.h), on the decoder of the codecs
// module (tracer/codecs.h).
#include "tracer/video.h"

#include <fmt/format.h>

#include <utility>

#include "tracer/codecs.h"

namespace leasehold::tracer {

struct FrameReader::Impl {
  std::unique_ptr<codecs::Decoder> decoder;
};

FrameReader::FrameReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FrameReader::~FrameReader() = default;

Result<std::unique_ptr<FrameReader>> FrameReader::open(const std::string& path,
                                                       const VideoLimits& limits) {
  LEASEHOLD_ASSIGN_OR_RETURN(const codecs::Codecs* codecs, codecs::load());
  auto impl = std::make_unique<Impl>();
  LEASEHOLD_ASSIGN_OR_RETURN(impl->decoder, codecs->open_video(path, limits));
  return std::unique_ptr<FrameReader>(new FrameReader(std::move(impl)));
}

const VideoFormat& FrameReader::format() const { return impl_->decoder->format(); }

int64_t FrameReader::frame() const { return impl_->decoder->frame(); }

Result<bool> FrameReader::next(bool want_pixels) { return impl_->decoder->next(want_pixels); }

FrameImage FrameReader::image() const { return impl_->decoder->image(); }

Result<VideoInfo> probe(const std::string& path, const VideoLimits& limits, std::stop_token stop) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<FrameReader> reader, FrameReader::open(path, limits));
  VideoInfo info;
  static_cast<VideoFormat&>(info) = reader->format();
  // The first frame is converted too: a file whose frames decode to nothing
  // usable is not a video, whatever its container says.
  LEASEHOLD_ASSIGN_OR_RETURN(bool first, reader->next(/*want_pixels=*/true));
  if (!first) {
    return invalid_argument(
        fmt::format("'{}' is not a video that can be read: no frame decodes", path));
  }
  for (;;) {
    if (stop.stop_requested()) return failed_precondition("probing stopped");
    LEASEHOLD_ASSIGN_OR_RETURN(bool more, reader->next(/*want_pixels=*/false));
    if (!more) break;
  }
  info.frame_count = reader->frame() + 1;
  return info;
}

}  // namespace leasehold::tracer
