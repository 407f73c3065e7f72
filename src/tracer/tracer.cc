// The tracer (tracer/tracer.h): template matching on OpenCV, the two passes
// around the key frames, and the frame-by-frame reporting.
#include "tracer/tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <utility>

namespace leasehold::tracer {
namespace {

// A template whose grey levels vary less than this (standard deviation) has
// nothing to match: normalized cross-correlation is undefined on it.
constexpr double kTemplateStdDevMin = 2.0;

struct Point {
  double x = 0;
  double y = 0;
};

// A marker's template: the patch of its key frame around it.
struct Template {
  cv::Mat patch;  // a copy, clipped to the frame
  Point anchor;   // the marker, relative to the patch's top-left pixel
  bool featureless = false;
};

Template cut_template(const cv::Mat& grey, const Marker& marker, int side_px) {
  int half = side_px / 2;
  cv::Rect square(static_cast<int>(std::lround(marker.x)) - half,
                  static_cast<int>(std::lround(marker.y)) - half, side_px, side_px);
  cv::Rect rect = square & cv::Rect(0, 0, grey.cols, grey.rows);
  Template t;
  t.patch = grey(rect).clone();
  t.anchor = {marker.x - rect.x, marker.y - rect.y};
  cv::Scalar mean, stddev;
  cv::meanStdDev(t.patch, mean, stddev);
  t.featureless = stddev[0] < kTemplateStdDevMin;
  return t;
}

// The vertex of the parabola through (-1, left), (0, centre), (1, right),
// within half a pixel of the centre.
double parabola_peak(float left, float centre, float right) {
  double curvature = double{left} - 2.0 * centre + right;
  if (curvature >= 0) return 0;  // not a peak: keep the whole pixel
  return std::clamp((double{left} - right) / (2.0 * curvature), -0.5, 0.5);
}

struct Match {
  Point position;
  double score = 0;
  bool inside = false;  // the peak is not on the window's edge: the window held it
};

// The radius of the small window searched first, around the prediction.
constexpr int kNearRadiusPx = 4;
// A peak in the small window is taken if its score is at least the last
// match's less this much; otherwise the whole window is searched.
constexpr double kNearScoreDropMax = 0.1;

// Markers often look alike. So that of two in one window the one nearer to
// where the marker is expected wins, a score is lowered by this much times
// (distance / search radius)^2 when the peak is chosen (its own score is
// kept).
constexpr double kDistancePenalty = 0.2;

// The peak of `scores` to follow: the best score lowered for its distance
// from `expected`, then the local maximum of the scores from there.
cv::Point choose_peak(const cv::Mat& scores, cv::Point expected, int radius_px) {
  cv::Point best(0, 0);
  double best_value = -1e9;
  const double radius = radius_px;
  const double scale = kDistancePenalty / (radius * radius);
  for (int y = 0; y < scores.rows; ++y) {
    const float* row = scores.ptr<float>(y);
    const double dy = y - expected.y;
    for (int x = 0; x < scores.cols; ++x) {
      const double dx = x - expected.x;
      double value = row[x] - scale * (dx * dx + dy * dy);
      if (value > best_value) {
        best_value = value;
        best = {x, y};
      }
    }
  }
  // Climb to the local maximum: the penalty may have stopped short of it.
  for (bool moved = true; moved;) {
    moved = false;
    cv::Point from = best;
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        cv::Point p(from.x + dx, from.y + dy);
        if (p.x < 0 || p.y < 0 || p.x >= scores.cols || p.y >= scores.rows) continue;
        if (scores.at<float>(p) > scores.at<float>(best)) {
          best = p;
          moved = true;
        }
      }
    }
  }
  return best;
}

// Scratch space for search(), reused from call to call.
struct SearchBuffers {
  cv::Mat window;  // the window in grey
  cv::Mat scores;
};

// The grey pixels of `rect` of `frame` (grey, or blue-green-red): a view of
// a grey frame, or converted into `scratch`. Only windows are converted: a
// whole frame costs as much as decoding a simple one.
cv::Mat grey_region(const cv::Mat& frame, cv::Rect rect, cv::Mat& scratch) {
  if (frame.channels() == 1) return frame(rect);
  cv::cvtColor(frame(rect), scratch, cv::COLOR_BGR2GRAY);
  return scratch;
}

// Searches `t` in `frame` (grey or blue-green-red) within `radius_px` of
// where `predicted` puts the marker.
Match search(const cv::Mat& frame, const Template& t, Point predicted, int radius_px,
             SearchBuffers& buffers) {
  if (t.featureless) return {predicted, 0};
  cv::Point expected_corner(static_cast<int>(std::lround(predicted.x - t.anchor.x)),
                            static_cast<int>(std::lround(predicted.y - t.anchor.y)));
  cv::Rect window = cv::Rect(expected_corner.x - radius_px, expected_corner.y - radius_px,
                             t.patch.cols + 2 * radius_px, t.patch.rows + 2 * radius_px) &
                    cv::Rect(0, 0, frame.cols, frame.rows);
  if (window.width < t.patch.cols || window.height < t.patch.rows) return {predicted, 0};
  cv::Mat& scores = buffers.scores;
  cv::matchTemplate(grey_region(frame, window, buffers.window), t.patch, scores,
                    cv::TM_CCOEFF_NORMED);
  cv::Point at = choose_peak(scores, expected_corner - window.tl(), radius_px);
  const float* row = scores.ptr<float>(at.y);
  double dx = 0, dy = 0;
  if (at.x > 0 && at.x < scores.cols - 1)
    dx = parabola_peak(row[at.x - 1], row[at.x], row[at.x + 1]);
  if (at.y > 0 && at.y < scores.rows - 1) {
    dy = parabola_peak(scores.at<float>(at.y - 1, at.x), row[at.x],
                       scores.at<float>(at.y + 1, at.x));
  }
  Point found{window.x + at.x + dx + t.anchor.x, window.y + at.y + dy + t.anchor.y};
  double score = row[at.x];
  bool inside = at.x > 0 && at.y > 0 && at.x < scores.cols - 1 && at.y < scores.rows - 1;
  return {found, std::isfinite(score) ? score : 0, inside};
}

// A marker on one sampled frame.
struct Sample {
  Point position;
  double score = 0;
  TrackStatus status = TrackStatus::kLost;
};

// Follows one marker from its key frame, one sampled frame after another, in
// one direction (forward or backward).
class Follower {
 public:
  Follower(const Template& t, Point start, const TraceOptions& options)
      : template_(&t), last_(start), options_(options) {}

  // Finds the marker on the next sampled frame, `frame` (grey or
  // blue-green-red).
  Sample step(const cv::Mat& frame) {
    // A steady motion is predicted to go on, through lost frames too. The
    // window does not grow while the marker is lost: markers often look
    // alike, and a wider window would find a neighbour.
    double steps = 1.0 + lost_run_;
    Point predicted{last_.x + step_.x * steps, last_.y + step_.y * steps};
    // Most of the time the marker is within a few pixels of the prediction:
    // a small window finds it for a fraction of the cost. The whole window
    // is searched when the small one does not hold a peak about as good as
    // the last match.
    Match match;
    bool found_near = false;
    if (options_.search_radius_px > kNearRadiusPx) {
      match = search(frame, *template_, predicted, kNearRadiusPx, buffers_);
      found_near = match.inside && match.score >= options_.score_min &&
                   match.score >= last_score_ - kNearScoreDropMax;
    }
    if (!found_near) {
      match = search(frame, *template_, predicted, options_.search_radius_px, buffers_);
    }
    if (match.score < options_.score_min) {
      ++lost_run_;
      return {match.position, match.score, TrackStatus::kLost};
    }
    step_ = {(match.position.x - last_.x) / steps, (match.position.y - last_.y) / steps};
    last_ = match.position;
    last_score_ = match.score;
    lost_run_ = 0;
    return {match.position, match.score, TrackStatus::kTracked};
  }

 private:
  const Template* template_;
  Point last_;             // where the marker was last tracked
  Point step_;             // its motion per sampled frame then
  double last_score_ = 1;  // the score of that match (1 on the key frame)
  int lost_run_ = 0;       // sampled frames lost since
  TraceOptions options_;
  SearchBuffers buffers_;
};

// Turns the samples of each sampled frame into rows, with velocities, and
// reports them in frame order, each once the next frame is known.
class Reporter {
 public:
  Reporter(const TraceRequest& request, const FrameCallback& on_frame)
      : request_(request), on_frame_(on_frame) {}

  // The samples of `frame`, presented at `time_us` (FrameReader::time_us()).
  Status push(int64_t frame, int64_t time_us, std::vector<Sample> samples) {
    Status status;
    if (current_) status = report(&samples, time_us);
    previous_ = std::move(current_);
    current_ = Frame{frame, time_us, std::move(samples)};
    return status;
  }

  Status finish() {
    if (!current_) return Status();
    return report(nullptr, 0);
  }

 private:
  struct Frame {
    int64_t frame = 0;
    int64_t time_us = 0;
    std::vector<Sample> samples;
  };

  // Reports current_, with `next` (the samples of the next sampled frame,
  // presented at `next_us`) if known.
  Status report(const std::vector<Sample>* next, int64_t next_us) {
    TracedFrame out;
    out.frame = current_->frame;
    out.time_s = static_cast<double>(current_->time_us) / 1e6;
    out.rows.reserve(request_.markers.size());
    for (size_t i = 0; i < request_.markers.size(); ++i) {
      const Marker& marker = request_.markers[i];
      const Sample& s = current_->samples[i];
      TrackRow row{marker.id,    marker.label, out.frame, out.time_s,   s.position.x,
                   s.position.y, s.score,      s.status,  std::nullopt, std::nullopt};
      if (previous_ && next != nullptr && s.status == TrackStatus::kTracked &&
          previous_->samples[i].status == TrackStatus::kTracked &&
          (*next)[i].status == TrackStatus::kTracked) {
        // The true interval: frames of a variable rate are not evenly apart.
        const double dt_s = static_cast<double>(next_us - previous_->time_us) / 1e6;
        row.vx_px_per_s = ((*next)[i].position.x - previous_->samples[i].position.x) / dt_s;
        row.vy_px_per_s = ((*next)[i].position.y - previous_->samples[i].position.y) / dt_s;
      }
      out.rows.push_back(std::move(row));
    }
    return on_frame_(out);
  }

  const TraceRequest& request_;
  const FrameCallback& on_frame_;
  std::optional<Frame> previous_;
  std::optional<Frame> current_;
};

int64_t sampled_frame(const TraceRequest& request, int64_t index) {
  return request.trim.start_frame + index * request.every_frames;
}

int64_t last_key_frame(const TraceRequest& request) {
  int64_t last = request.trim.start_frame;
  for (const Marker& m : request.markers) last = std::max(last, m.frame);
  return last;
}

// The frames decoded with their pixels and kept until the last key frame:
// the sampled frames up to it and every key frame.
std::set<int64_t> frames_to_keep(const TraceRequest& request) {
  std::set<int64_t> frames;
  Trim up_to_last{request.trim.start_frame, last_key_frame(request)};
  int64_t count = sampled_frame_count(up_to_last, request.every_frames);
  for (int64_t j = 0; j < count; ++j) frames.insert(sampled_frame(request, j));
  for (const Marker& m : request.markers) frames.insert(m.frame);
  return frames;
}

bool is_sampled(const TraceRequest& request, int64_t frame) {
  return (frame - request.trim.start_frame) % request.every_frames == 0;
}

}  // namespace

std::string_view status_name(TrackStatus status) {
  return status == TrackStatus::kTracked ? "tracked" : "lost";
}

int64_t sampled_frame_count(const Trim& trim, int64_t every_frames) {
  assert(every_frames >= 1 && trim.end_frame >= trim.start_frame);
  return (trim.end_frame - trim.start_frame) / every_frames + 1;
}

namespace {

Status validate_trim(const TraceRequest& request, const VideoInfo& video) {
  const Trim& trim = request.trim;
  if (trim.start_frame < 0 || trim.start_frame > trim.end_frame) {
    return invalid_argument(
        fmt::format("the trim {}..{} is not a range of frames", trim.start_frame, trim.end_frame));
  }
  if (trim.end_frame >= video.frame_count) {
    return invalid_argument(fmt::format("the trim ends at frame {}, past the video's last frame {}",
                                        trim.end_frame, video.frame_count - 1));
  }
  if (request.every_frames < 1) {
    return invalid_argument(
        fmt::format("the interval between sampled frames must be at least 1 "
                    "frame, not {}",
                    request.every_frames));
  }
  return Status();
}

Status validate_options(const TraceOptions& options, const VideoInfo& video) {
  int side_max_px = std::min({kTemplatePxMax, video.width, video.height});
  if (options.template_px < kTemplatePxMin || options.template_px > side_max_px ||
      options.template_px % 2 == 0) {
    return invalid_argument(fmt::format("the template size must be odd, {}..{} px, not {}",
                                        kTemplatePxMin, side_max_px, options.template_px));
  }
  if (options.search_radius_px < 1 || options.search_radius_px > kSearchRadiusPxMax) {
    return invalid_argument(fmt::format("the search radius must be 1..{} px, not {}",
                                        kSearchRadiusPxMax, options.search_radius_px));
  }
  if (!(options.score_min >= 0 && options.score_min <= 1)) {
    return invalid_argument(
        fmt::format("the score threshold must be 0..1, not {}", options.score_min));
  }
  return Status();
}

Status validate_markers(const TraceRequest& request, const VideoInfo& video) {
  if (request.markers.empty() || request.markers.size() > kMarkersMax) {
    return invalid_argument(
        fmt::format("a trace needs 1..{} markers, not {}", kMarkersMax, request.markers.size()));
  }
  std::set<std::string_view> ids;
  for (const Marker& m : request.markers) {
    if (m.id.empty() || m.id.size() > kMarkerIdBytesMax) {
      return invalid_argument(fmt::format("a marker ID must have 1..{} bytes", kMarkerIdBytesMax));
    }
    if (!ids.insert(m.id).second) {
      return invalid_argument(fmt::format("marker ID '{}' is used twice", m.id));
    }
    if (m.label.size() > kMarkerLabelBytesMax) {
      return invalid_argument(fmt::format("the label of marker '{}' is longer than {} bytes", m.id,
                                          kMarkerLabelBytesMax));
    }
    if (m.frame < request.trim.start_frame || m.frame > request.trim.end_frame) {
      return invalid_argument(fmt::format("marker '{}' is on frame {}, outside the trim {}..{}",
                                          m.id, m.frame, request.trim.start_frame,
                                          request.trim.end_frame));
    }
    if (!(m.x >= 0 && m.x <= video.width - 1 && m.y >= 0 && m.y <= video.height - 1)) {
      return invalid_argument(fmt::format("marker '{}' at ({}, {}) is outside the {}x{} px frame",
                                          m.id, m.x, m.y, video.width, video.height));
    }
  }
  return Status();
}

// The frames trace() keeps in memory until the last key frame must fit in
// kBufferedBytesMax.
Status validate_buffered_bytes(const TraceRequest& request, const VideoInfo& video) {
  int64_t frames = sampled_frame_count({request.trim.start_frame, last_key_frame(request)},
                                       request.every_frames);
  std::set<int64_t> unsampled_keys;
  for (const Marker& m : request.markers) {
    if (!is_sampled(request, m.frame)) unsampled_keys.insert(m.frame);
  }
  frames += static_cast<int64_t>(unsampled_keys.size());
  int64_t frame_bytes = int64_t{video.width} * video.height;
  if (frames * frame_bytes > kBufferedBytesMax) {
    return invalid_argument(fmt::format(
        "the last key frame ({}) is too far from the trim start ({}): {} frames would be kept in "
        "memory until it is decoded, at most {} fit; place the markers on earlier frames",
        last_key_frame(request), request.trim.start_frame, frames,
        kBufferedBytesMax / frame_bytes));
  }
  return Status();
}

}  // namespace

Status validate(const TraceRequest& request, const VideoInfo& video) {
  if (!(video.width > 0 && video.height > 0 && video.frame_count > 0 && std::isfinite(video.fps) &&
        video.fps > 0)) {
    return invalid_argument("the video has no frames to trace");
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_trim(request, video));
  LEASEHOLD_RETURN_IF_ERROR(validate_options(request.options, video));
  LEASEHOLD_RETURN_IF_ERROR(validate_markers(request, video));
  return validate_buffered_bytes(request, video);
}

namespace {

// A view of a decoded frame.
cv::Mat wrap(const FrameImage& image) {
  return cv::Mat(image.height, image.width, image.channels == 3 ? CV_8UC3 : CV_8UC1,
                 const_cast<uint8_t*>(image.pixels), image.row_bytes);
}

// A grey copy of a decoded frame.
cv::Mat grey_copy(const FrameImage& image) {
  cv::Mat grey;
  if (image.channels == 3) {
    cv::cvtColor(wrap(image), grey, cv::COLOR_BGR2GRAY);
  } else {
    wrap(image).copyTo(grey);
  }
  return grey;
}

// One call of trace(): the video being read, the markers' templates and
// followers, and the reporter.
class Run {
 public:
  Run(const std::string& path, const VideoInfo& video, const TraceRequest& request,
      FrameReader& reader, const FrameCallback& on_frame, std::stop_token stop)
      : path_(path),
        video_(video),
        request_(request),
        reader_(reader),
        reporter_(request, on_frame),
        stop_(std::move(stop)) {}

  Status run() {
    LEASEHOLD_RETURN_IF_ERROR(trace_to_last_key_frame());
    LEASEHOLD_RETURN_IF_ERROR(trace_after_last_key_frame());
    return reporter_.finish();
  }

 private:
  // Decodes frames up to `frame`, converting only that one.
  Status decode_to(int64_t frame) {
    while (reader_.frame() < frame) {
      if (stop_.stop_requested()) return failed_precondition("tracing stopped");
      LEASEHOLD_ASSIGN_OR_RETURN(bool decoded,
                                 reader_.next(/*want_pixels=*/reader_.frame() + 1 == frame));
      if (!decoded) {
        return invalid_argument(
            fmt::format("'{}' ends after frame {}, not after frame {} as when "
                        "it was probed",
                        path_, reader_.frame(), video_.frame_count - 1));
      }
      if (request_.options.on_decoded) request_.options.on_decoded(reader_.frame());
    }
    return Status();
  }

  Status trace_to_last_key_frame();
  Status trace_after_last_key_frame();

  const std::string& path_;
  const VideoInfo& video_;
  const TraceRequest& request_;
  FrameReader& reader_;
  Reporter reporter_;
  std::stop_token stop_;
  std::vector<Template> templates_;  // one per marker
  std::vector<Follower> followers_;  // one per marker, forward from the last key frame
};

// Decodes and keeps the frames up to the last key frame, cuts every
// marker's template on its key frame, traces each marker backward to the
// trim start and forward to the last key frame, and reports those frames.
Status Run::trace_to_last_key_frame() {
  std::map<int64_t, cv::Mat> kept;
  std::map<int64_t, int64_t> kept_us;  // their times
  for (int64_t frame : frames_to_keep(request_)) {
    LEASEHOLD_RETURN_IF_ERROR(decode_to(frame));
    kept[frame] = grey_copy(reader_.image());
    kept_us[frame] = reader_.time_us();
  }
  const int64_t every = request_.every_frames;
  const int64_t count =
      sampled_frame_count({request_.trim.start_frame, last_key_frame(request_)}, every);
  const size_t markers = request_.markers.size();
  std::vector<std::vector<Sample>> samples(count, std::vector<Sample>(markers));
  templates_.reserve(markers);  // the followers point into it
  for (size_t i = 0; i < markers; ++i) {
    const Marker& m = request_.markers[i];
    const TraceOptions& options = request_.options;
    templates_.push_back(cut_template(kept.at(m.frame), m, options.template_px));
    const Point key{m.x, m.y};
    // The first sampled frame at or after the key frame (written so that a
    // huge interval cannot overflow).
    const int64_t from_start = m.frame - request_.trim.start_frame;
    const int64_t after = from_start == 0 ? 0 : (from_start - 1) / every + 1;
    Follower backward(templates_[i], key, options);
    for (int64_t j = after - 1; j >= 0; --j) {
      samples[j][i] = backward.step(kept.at(sampled_frame(request_, j)));
    }
    Follower forward(templates_[i], key, options);
    for (int64_t j = after; j < count; ++j) {
      int64_t frame = sampled_frame(request_, j);
      samples[j][i] =
          frame == m.frame ? Sample{key, 1.0, TrackStatus::kTracked} : forward.step(kept.at(frame));
    }
    followers_.push_back(std::move(forward));
  }
  kept.clear();
  for (int64_t j = 0; j < count; ++j) {
    const int64_t frame = sampled_frame(request_, j);
    LEASEHOLD_RETURN_IF_ERROR(reporter_.push(frame, kept_us.at(frame), std::move(samples[j])));
  }
  return Status();
}

// Traces every marker forward over the sampled frames after the last key
// frame, reporting each frame as it goes.
Status Run::trace_after_last_key_frame() {
  const int64_t every = request_.every_frames;
  const int64_t first =
      sampled_frame_count({request_.trim.start_frame, last_key_frame(request_)}, every);
  const int64_t count = sampled_frame_count(request_.trim, every);
  for (int64_t j = first; j < count; ++j) {
    int64_t frame = sampled_frame(request_, j);
    LEASEHOLD_RETURN_IF_ERROR(decode_to(frame));
    cv::Mat image = wrap(reader_.image());
    std::vector<Sample> samples;
    samples.reserve(followers_.size());
    for (Follower& follower : followers_) samples.push_back(follower.step(image));
    LEASEHOLD_RETURN_IF_ERROR(reporter_.push(frame, reader_.time_us(), std::move(samples)));
  }
  return Status();
}

}  // namespace

Status trace(const std::string& path, const VideoInfo& video, const TraceRequest& request,
             const FrameCallback& on_frame, std::stop_token stop) {
  LEASEHOLD_RETURN_IF_ERROR(validate(request, video));
  // The video as it was probed bounds the reading: the request never needs
  // a frame past the probed count.
  VideoLimits limits;
  limits.frames_max = video.frame_count;
  limits.side_max_px = std::max({limits.side_max_px, video.width, video.height});
  limits.fps_max = std::max(limits.fps_max, video.fps);
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<FrameReader> reader, FrameReader::open(path, limits));
  if (reader->format().width != video.width || reader->format().height != video.height) {
    return invalid_argument(fmt::format(
        "'{}' has frames of {}x{} px, not {}x{} as when it was "
        "probed",
        path, reader->format().width, reader->format().height, video.width, video.height));
  }
  Run run(path, video, request, *reader, on_frame, std::move(stop));
  return run.run();
}

}  // namespace leasehold::tracer
