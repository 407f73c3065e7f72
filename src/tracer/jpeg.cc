// OpenCV's JPEG encoder behind tracer/jpeg.h.
#include "tracer/jpeg.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <vector>

namespace leasehold::tracer {

Result<std::string> encode_jpeg(const FrameImage& image, int quality) {
  if (image.pixels == nullptr || image.width < 1 || image.height < 1) {
    return invalid_argument("no image to encode");
  }
  if (image.channels != 3 && image.channels != 1) {
    return invalid_argument("an image to encode has 1 or 3 channels");
  }
  if (quality < 1 || quality > 100) return invalid_argument("JPEG quality is 1..100");
  // A header over the reader's pixels: nothing is copied before encoding.
  const cv::Mat pixels(image.height, image.width, image.channels == 3 ? CV_8UC3 : CV_8UC1,
                       const_cast<uint8_t*>(image.pixels), image.row_bytes);
  std::vector<uint8_t> bytes;
  try {
    if (!cv::imencode(".jpg", pixels, bytes, {cv::IMWRITE_JPEG_QUALITY, quality})) {
      return internal_error("the JPEG encoder failed");
    }
  } catch (const cv::Exception& e) {
    return internal_error(std::string("the JPEG encoder failed: ") + e.what());
  }
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace leasehold::tracer
