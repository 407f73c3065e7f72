// The movie tracer: follows the markers a user placed on a movie through its
// frames, for the movie tracing service.
//
// A request names markers (a point on a key frame each), a trim (the first
// and last frame to trace) and an interval: the sampled frames are trim
// start, start + interval, ... up to trim end. For each marker, a square
// template is cut around it on its key frame; on each sampled frame it is
// searched with normalized cross-correlation (OpenCV's TM_CCOEFF_NORMED)
// around the predicted position (the last position plus the last step):
// first within a few pixels, then, unless a peak about as good as the last
// match is there, in the whole window of the search radius, where a peak
// nearer to the prediction is preferred to a slightly better one farther
// away (markers often look alike). The best match is refined to sub-pixel
// by a parabola through the scores beside it. A best match below the score
// threshold makes the marker `lost` on that frame; while it stays lost, it
// is searched where its last motion would have taken it, in a window of the
// same size, so that it is found again after an occlusion. The template is
// never updated (so the position does not drift) and is matched by
// translation only: a marker that turns, grows or shrinks much from its key
// frame is lost. A marker on a featureless patch (a template of one grey)
// is lost on every frame but its key frame.
//
// A key frame may be any frame of the trim, sampled or not, and markers may
// have different key frames: each marker is traced backward from its key
// frame to the trim start and forward to the trim end. The video is read
// once, sequentially; so the sampled frames up to the last key frame are
// kept in memory (in grey) until that key frame is decoded, which
// bounds the request (kBufferedBytesMax). Markers whose key frame is the trim
// start need none of that.
//
// Positions are in pixels of the frame, x to the right and y down, with the
// centre of the top-left pixel at (0, 0). A frame's time is its presentation
// time in the container, from the first frame's (FrameReader::time_us()),
// not its number over a frame rate. Velocities are central differences of
// the positions on the sampled frames before and after, over the time
// between those two frames, in px/s; they are empty on a lost frame, next to
// one, and on the first and last sampled frames.
//
// Results are reported frame by frame, in frame order, through a callback:
// each sampled frame once the next one is traced (its velocities need it),
// the last one at the end. The frames up to the last key frame come together
// once it is decoded. A callback that returns an error stops tracing at once.
//
// Threads: trace() runs on the calling thread and calls the callback there;
// FFmpeg decodes, and OpenCV may compute, on threads of their own. Calls on
// different threads are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/status.h"
#include "tracer/video.h"

namespace leasehold::tracer {

inline constexpr size_t kMarkersMax = 64;
inline constexpr size_t kMarkerIdBytesMax = 64;
inline constexpr size_t kMarkerLabelBytesMax = 256;
inline constexpr int kTemplatePxMin = 5;
inline constexpr int kTemplatePxMax = 101;
inline constexpr int kSearchRadiusPxMax = 256;
// Frames kept in memory before the last key frame is decoded: width x height
// bytes each.
inline constexpr int64_t kBufferedBytesMax = int64_t{256} << 20;

// A point the user placed on frame `frame`.
struct Marker {
  std::string id;     // unique in the request, 1..kMarkerIdBytesMax bytes
  std::string label;  // for humans, up to kMarkerLabelBytesMax bytes
  int64_t frame = 0;  // its key frame, within the trim
  double x = 0;       // px, 0 <= x <= width - 1
  double y = 0;       // px, 0 <= y <= height - 1
};

// The frames to trace, both ends included.
struct Trim {
  int64_t start_frame = 0;
  int64_t end_frame = 0;
};

struct TraceOptions {
  // The side of the square template cut around each marker, odd,
  // kTemplatePxMin..kTemplatePxMax and at most the frame's width and height.
  int template_px = 21;
  // How far from its predicted position a marker is searched on the next
  // sampled frame, 1..kSearchRadiusPxMax. It must cover how far a marker may
  // move from one sampled frame to the next beyond a steady motion, and is
  // best kept below the distance between markers that look alike.
  int search_radius_px = 24;
  // The normalized cross-correlation below which a marker is lost, 0..1.
  double score_min = 0.6;
  // Called after each frame decoded, sampled or not, with its number: what a
  // watchdog sees of a trace that reports no sampled frame for a long time
  // (a trim that starts far in, a long capture interval). Null: nothing.
  std::function<void(int64_t frame)> on_decoded;
};

struct TraceRequest {
  std::vector<Marker> markers;  // 1..kMarkersMax
  Trim trim;
  int64_t every_frames = 1;  // the interval between sampled frames, >= 1
  TraceOptions options;
};

enum class TrackStatus { kTracked, kLost };

// "tracked" or "lost".
std::string_view status_name(TrackStatus status);

// A marker on a sampled frame.
struct TrackRow {
  std::string marker_id;
  std::string label;
  int64_t frame = 0;
  double time_s = 0;  // the frame's presentation time, from the first frame's
  // Where the marker is; on a lost frame, where the best match below the
  // threshold was (a hint, not a position).
  double x = 0;
  double y = 0;
  double score = 0;  // the match's normalized cross-correlation; 1 on the key frame
  TrackStatus status = TrackStatus::kTracked;
  std::optional<double> vx_px_per_s;
  std::optional<double> vy_px_per_s;
};

// The rows of one sampled frame: one per marker, in the request's order.
struct TracedFrame {
  int64_t frame = 0;
  double time_s = 0;
  std::vector<TrackRow> rows;
};

// Called with each sampled frame, in frame order. A non-OK Status stops
// tracing: trace() returns it.
using FrameCallback = std::function<Status(const TracedFrame&)>;

// The number of sampled frames of `trim` at `every_frames`. REQUIRES: a
// valid trim and every_frames >= 1.
int64_t sampled_frame_count(const Trim& trim, int64_t every_frames);

// Checks `request` against the video it is for, as probe() found it:
// returns kInvalidArgument naming the first problem (a trim outside the
// video's frames, an interval below 1, a marker outside its frame or the
// trim, options out of range, too many frames to keep before the last key
// frame). Decodes nothing: a service calls it before it accepts a request.
Status validate(const TraceRequest& request, const VideoInfo& video);

// Traces `request` through the video at `path`, which probe() described as
// `video`, and reports each sampled frame to `on_frame`. Validates the
// request first (validate()), before anything is opened. Returns OK once the
// last sampled frame is reported; the callback's error if it returns one;
// kFailedPrecondition ("tracing stopped") soon after `stop` is requested,
// which is checked before each frame is decoded; probe()'s errors for the
// file; kInvalidArgument if the file is not the video `video` describes
// (another frame size, or fewer frames: some may have been reported by then).
Status trace(const std::string& path, const VideoInfo& video, const TraceRequest& request,
             const FrameCallback& on_frame, std::stop_token stop = {});

}  // namespace leasehold::tracer
