// JPEG images (tracer/jpeg.h): checked here, encoded by the codecs module
// (tracer/jpeg_encoder.cc).
#include "tracer/jpeg.h"

#include "tracer/codecs.h"

namespace leasehold::tracer {

Result<std::string> encode_jpeg(const FrameImage& image, int quality) {
  if (image.pixels == nullptr || image.width < 1 || image.height < 1) {
    return invalid_argument("no image to encode");
  }
  if (image.channels != 3 && image.channels != 1) {
    return invalid_argument("an image to encode has 1 or 3 channels");
  }
  if (quality < 1 || quality > 100) return invalid_argument("JPEG quality is 1..100");
  LEASEHOLD_ASSIGN_OR_RETURN(const codecs::Codecs* codecs, codecs::load());
  return codecs->encode_jpeg(image, quality);
}

}  // namespace leasehold::tracer
