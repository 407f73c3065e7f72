// The synthetic movie writer of the codecs module (tracer/codecs.h): frames
// drawn with OpenCV and encoded by its FFmpeg backend, behind
// write_synthetic_movie().
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "tracer/codecs_module.h"

namespace leasehold::tracer::codecs {
namespace {

constexpr float kSpotBright = 235;
constexpr float kSpotDark = 25;
constexpr float kCoverGrey = 128;
constexpr int kCoverMarginPx = 4;  // a cover reaches this far beyond its spot

// Smooth random texture: coarse blobs and fine grain, grey levels about
// 70..180.
cv::Mat background(const SyntheticMovie& movie, cv::RNG& rng) {
  cv::Mat coarse(movie.height / 16 + 2, movie.width / 16 + 2, CV_32F);
  rng.fill(coarse, cv::RNG::UNIFORM, 80, 170);
  cv::Mat texture;
  cv::resize(coarse, texture, cv::Size(movie.width, movie.height), 0, 0, cv::INTER_CUBIC);
  cv::Mat grain(movie.height, movie.width, CV_32F);
  rng.fill(grain, cv::RNG::NORMAL, 0, 10);
  cv::GaussianBlur(grain, grain, cv::Size(0, 0), 1.0);
  return texture + grain;
}

// The share of a pixel at distance `d` from a centre that lies within
// `radius` of it (a one-pixel ramp: anti-aliasing).
float inside(double d, double radius) {
  return static_cast<float>(std::clamp(radius - d + 0.5, 0.0, 1.0));
}

void draw_spot(cv::Mat& frame, const Spot& spot, SpotPosition at) {
  const double r = spot.radius_px;
  int x_min = std::max(0, static_cast<int>(std::floor(at.x - r - 1)));
  int x_max = std::min(frame.cols - 1, static_cast<int>(std::ceil(at.x + r + 1)));
  int y_min = std::max(0, static_cast<int>(std::floor(at.y - r - 1)));
  int y_max = std::min(frame.rows - 1, static_cast<int>(std::ceil(at.y + r + 1)));
  for (int y = y_min; y <= y_max; ++y) {
    float* row = frame.ptr<float>(y);
    for (int x = x_min; x <= x_max; ++x) {
      double d = std::hypot(x - at.x, y - at.y);
      float alpha = inside(d, r);
      if (alpha <= 0) continue;
      float ring = inside(d, 0.75 * r) - inside(d, 0.45 * r);
      float value = kSpotBright - (kSpotBright - kSpotDark) * ring;
      row[x] = row[x] * (1 - alpha) + value * alpha;
    }
  }
}

void draw_cover(cv::Mat& frame, const Spot& spot, SpotPosition at) {
  int half = spot.radius_px + kCoverMarginPx;
  cv::Rect square(static_cast<int>(std::lround(at.x)) - half,
                  static_cast<int>(std::lround(at.y)) - half, 2 * half + 1, 2 * half + 1);
  frame(square & cv::Rect(0, 0, frame.cols, frame.rows)).setTo(kCoverGrey);
}

}  // namespace

Status write_movie(const std::string& path, const SyntheticMovie& movie) {
  const std::string& c = movie.fourcc;
  cv::VideoWriter writer;
  try {
    writer.open(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc(c[0], c[1], c[2], c[3]), movie.fps,
                cv::Size(movie.width, movie.height), /*isColor=*/true);
  } catch (const cv::Exception&) {
  }
  if (!writer.isOpened()) {
    return unavailable(fmt::format("FFmpeg cannot write '{}' with codec {}", path, c));
  }
  cv::RNG rng(movie.seed);
  const cv::Mat still = background(movie, rng);
  cv::Mat frame, noise(movie.height, movie.width, CV_32F), grey, bgr;
  for (int64_t f = 0; f < movie.frames; ++f) {
    still.copyTo(frame);
    for (const Spot& spot : movie.spots) draw_spot(frame, spot, spot_position(spot, f));
    for (const Cover& cover : movie.covers) {
      if (f >= cover.first_frame && f <= cover.last_frame) {
        const Spot& spot = movie.spots[cover.spot];
        draw_cover(frame, spot, spot_position(spot, f));
      }
    }
    rng.fill(noise, cv::RNG::NORMAL, 0, movie.noise_grey);
    frame += noise;
    frame.convertTo(grey, CV_8U);  // rounds and saturates
    cv::cvtColor(grey, bgr, cv::COLOR_GRAY2BGR);
    writer.write(bgr);
  }
  writer.release();
  return Status();
}

}  // namespace leasehold::tracer::codecs
