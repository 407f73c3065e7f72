// The JPEG encoder of the codecs module (tracer/codecs.h): OpenCV's image
// codecs behind encode_jpeg().
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "tracer/codecs_module.h"

namespace leasehold::tracer::codecs {

Result<std::string> encode_jpeg(const FrameImage& image, int quality) {
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

}  // namespace leasehold::tracer::codecs
