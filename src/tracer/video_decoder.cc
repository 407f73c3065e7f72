// The video decoder of the codecs module (tracer/codecs.h): OpenCV's FFmpeg
// backend behind FrameReader. Nothing else in the tracer opens a video.
#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>
#include <system_error>
#include <utility>

#include "tracer/codecs_module.h"

namespace leasehold::tracer::codecs {
namespace {

// The stream's four-character code, if it has one that reads as text.
std::optional<std::string> fourcc_text(double value) {
  if (!(value > 0) || value > 0xFFFFFFFFu) return std::nullopt;
  auto code = static_cast<uint32_t>(value);
  std::string text;
  for (int i = 0; i < 4; ++i) {
    char c = static_cast<char>((code >> (8 * i)) & 0xFF);
    if (c < 0x20 || c > 0x7E) return std::nullopt;
    text.push_back(c);
  }
  return text;
}

// Opens `path` with the FFmpeg backend and checks the container's format
// against `limits`.
Status open_capture(const std::string& path, const VideoLimits& limits, cv::VideoCapture& capture,
                    VideoFormat& format) {
  std::error_code error;
  std::filesystem::path file = std::filesystem::absolute(path, error);
  if (error) return invalid_argument(fmt::format("'{}' is not a usable path", path));
  auto status = std::filesystem::status(file, error);
  if (!std::filesystem::exists(status)) return not_found(fmt::format("no file '{}'", path));
  if (!std::filesystem::is_regular_file(status)) {
    return invalid_argument(fmt::format("'{}' is not a regular file", path));
  }
  if (std::filesystem::file_size(file, error) == 0 || error) {
    return invalid_argument(fmt::format("'{}' is empty, not a video", path));
  }
  // OpenCV reports a file it cannot open by returning false, and reports
  // some internal failures by throwing; both mean the same to the caller.
  try {
    if (!capture.open(file.string(), cv::CAP_FFMPEG) || !capture.isOpened()) {
      return invalid_argument(fmt::format("'{}' is not a video that can be read", path));
    }
    format.fps = capture.get(cv::CAP_PROP_FPS);
    double width = capture.get(cv::CAP_PROP_FRAME_WIDTH);
    double height = capture.get(cv::CAP_PROP_FRAME_HEIGHT);
    format.codec = fourcc_text(capture.get(cv::CAP_PROP_FOURCC));
    if (!(width >= 1 && height >= 1 && width <= limits.side_max_px &&
          height <= limits.side_max_px)) {
      return invalid_argument(fmt::format("'{}' has frames of {}x{} px; at most {}x{} are read",
                                          path, width, height, limits.side_max_px,
                                          limits.side_max_px));
    }
    format.width = static_cast<int>(width);
    format.height = static_cast<int>(height);
  } catch (const cv::Exception&) {
    return invalid_argument(fmt::format("'{}' is not a video that can be read", path));
  }
  if (!std::isfinite(format.fps) || format.fps <= 0 || format.fps > limits.fps_max) {
    return invalid_argument(
        fmt::format("'{}' has no usable frame rate ({} frames/s)", path, format.fps));
  }
  return Status();
}

// FrameReader's work on a cv::VideoCapture.
class CaptureDecoder final : public Decoder {
 public:
  CaptureDecoder(std::string path, VideoLimits limits) : path_(std::move(path)), limits_(limits) {}

  Status open() { return open_capture(path_, limits_, capture_, format_); }

  const VideoFormat& format() const override { return format_; }

  int64_t frame() const override { return frame_; }

  Result<bool> next(bool want_pixels) override {
    has_pixels_ = false;
    try {
      if (!capture_.grab()) return false;
      if (frame_ + 1 >= limits_.frames_max) {
        return invalid_argument(
            fmt::format("'{}' has more than {} frames", path_, limits_.frames_max));
      }
      ++frame_;
      if (!want_pixels) return true;
      // A frame that decodes to nothing ends the video, as a failed grab does.
      if (!capture_.retrieve(pixels_) || pixels_.empty()) return false;
    } catch (const cv::Exception&) {
      return false;
    }
    if (pixels_.cols != format_.width || pixels_.rows != format_.height) {
      return invalid_argument(fmt::format("frame {} of '{}' is {}x{} px, not {}x{} as the video",
                                          frame_, path_, pixels_.cols, pixels_.rows, format_.width,
                                          format_.height));
    }
    if (pixels_.type() != CV_8UC3 && pixels_.type() != CV_8UC1) {
      return invalid_argument(
          fmt::format("frame {} of '{}' has an unexpected pixel format", frame_, path_));
    }
    has_pixels_ = true;
    return true;
  }

  FrameImage image() const override {
    assert(has_pixels_ && "image() needs a frame decoded with its pixels");
    return FrameImage{pixels_.ptr<uint8_t>(0), pixels_.cols, pixels_.rows, pixels_.channels(),
                      pixels_.step[0]};
  }

 private:
  const std::string path_;
  const VideoLimits limits_;
  VideoFormat format_;
  cv::VideoCapture capture_;
  int64_t frame_ = -1;
  bool has_pixels_ = false;
  cv::Mat pixels_;  // the decoded frame, converted by FFmpeg; reused from frame to frame
};

}  // namespace

Result<std::unique_ptr<Decoder>> open_video(const std::string& path, const VideoLimits& limits) {
  auto decoder = std::make_unique<CaptureDecoder>(path, limits);
  LEASEHOLD_RETURN_IF_ERROR(decoder->open());
  return std::unique_ptr<Decoder>(std::move(decoder));
}

}  // namespace leasehold::tracer::codecs
