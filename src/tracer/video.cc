// OpenCV's FFmpeg backend behind tracer/video.h. Nothing else in the tracer
// opens a video.
#include "tracer/video.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>
#include <system_error>
#include <utility>

namespace leasehold::tracer {
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

}  // namespace

struct FrameReader::Impl {
  std::string path;
  VideoLimits limits;
  VideoFormat format;
  cv::VideoCapture capture;
  int64_t frame = -1;
  bool has_pixels = false;
  cv::Mat pixels;  // the decoded frame, converted by FFmpeg; reused from frame to frame
};

FrameReader::FrameReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FrameReader::~FrameReader() = default;

Result<std::unique_ptr<FrameReader>> FrameReader::open(const std::string& path,
                                                       const VideoLimits& limits) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->limits = limits;
  LEASEHOLD_RETURN_IF_ERROR(open_capture(path, limits, impl->capture, impl->format));
  return std::unique_ptr<FrameReader>(new FrameReader(std::move(impl)));
}

const VideoFormat& FrameReader::format() const { return impl_->format; }

int64_t FrameReader::frame() const { return impl_->frame; }

Result<bool> FrameReader::next(bool want_pixels) {
  Impl& m = *impl_;
  m.has_pixels = false;
  try {
    if (!m.capture.grab()) return false;
    if (m.frame + 1 >= m.limits.frames_max) {
      return invalid_argument(
          fmt::format("'{}' has more than {} frames", m.path, m.limits.frames_max));
    }
    ++m.frame;
    if (!want_pixels) return true;
    // A frame that decodes to nothing ends the video, as a failed grab does.
    if (!m.capture.retrieve(m.pixels) || m.pixels.empty()) return false;
  } catch (const cv::Exception&) {
    return false;
  }
  if (m.pixels.cols != m.format.width || m.pixels.rows != m.format.height) {
    return invalid_argument(fmt::format("frame {} of '{}' is {}x{} px, not {}x{} as the video",
                                        m.frame, m.path, m.pixels.cols, m.pixels.rows,
                                        m.format.width, m.format.height));
  }
  if (m.pixels.type() != CV_8UC3 && m.pixels.type() != CV_8UC1) {
    return invalid_argument(
        fmt::format("frame {} of '{}' has an unexpected pixel format", m.frame, m.path));
  }
  m.has_pixels = true;
  return true;
}

FrameImage FrameReader::image() const {
  const Impl& m = *impl_;
  assert(m.has_pixels && "image() needs a frame decoded with its pixels");
  return FrameImage{m.pixels.ptr<uint8_t>(0), m.pixels.cols, m.pixels.rows, m.pixels.channels(),
                    m.pixels.step[0]};
}

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
