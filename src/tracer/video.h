// Video files for the movie tracer: probe() checks that a file is a video
// the tracer can read, counts its frames by decoding them and notes each
// one's presentation time; FrameReader decodes a video frame after frame,
// hands out the pixels of the frames it is asked for, and, given the times
// probe() noted, goes straight to any frame.
//
// Videos are read with FFmpeg's libraries, and from regular files only: a
// path is made absolute and read through FFmpeg's file protocol alone, so
// that neither it nor a reference inside the file is taken for another
// (`http:`, `concat:`). Frames are numbered from 0 in the order the decoder
// gives them, which is presentation order. A container's own frame count is
// not trusted (it is often missing, and wrong for a truncated file): the
// frame count is the number of frames that decode, and a video ends where
// decoding stops.
//
// A frame's time is its presentation timestamp, from the container, less
// the first frame's: never its number divided by a frame rate, which is
// wrong for the variable rates phones record at.
//
// The work a file can cause is bounded by VideoLimits: frame size, frame
// count, frame rate. A file that is not a video, or whose frames cannot be
// decoded, is refused with kInvalidArgument and a message for the user.
//
// Threads: probe() may be called from any thread. A FrameReader is used from
// one thread at a time; readers are independent of each other. FFmpeg
// decodes on threads of its own inside each reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::tracer {

// What the tracer agrees to read. A video outside them is refused with
// kInvalidArgument.
struct VideoLimits {
  int64_t frames_max = 100'000;  // about an hour at 25 frames per second
  int side_max_px = 4096;        // width and height
  double fps_max = 1000;
  // A reader keeps the last frames it decoded (as the decoder holds them:
  // about 3 MB each at 1080p), so that seek() back to one of them decodes
  // nothing: a page stepping back through a movie.
  int frames_kept = 0;
};

// What the container says about a video.
struct VideoFormat {
  double fps = 0;  // frames per second, > 0: the stream's nominal rate
  int width = 0;   // px
  int height = 0;  // px
  // The stream's four-character code ("MJPG", "avc1"), else its codec's
  // name ("h264"), if any.
  std::optional<std::string> codec;
  // The unit of the stream's timestamps: num / den seconds.
  int time_base_num = 0;
  int time_base_den = 0;
};

// Each frame's timestamp, and the frames decoding can start at.
struct FrameTimes {
  int time_base_num = 1;  // pts's unit: num / den seconds
  int time_base_den = 1;
  std::vector<int64_t> pts;   // frame n's presentation timestamp
  std::vector<int64_t> keys;  // key frames: ascending frame numbers

  // Frame n's time from the first frame's, in microseconds (rounded).
  // REQUIRES: 0 <= n < pts.size().
  int64_t us(int64_t n) const;
  // Whether FrameReader::seek() can use these: timestamps that only go up,
  // and frame 0 a key frame.
  bool seekable() const;
};

// A video as probe() found it: its format, its number of decodable frames,
// and their times.
struct VideoInfo : VideoFormat {
  int64_t frame_count = 0;  // frames 0 .. frame_count - 1 decode
  FrameTimes times;         // one timestamp per frame
  // Frames per second over the whole movie, from its first frame's time to
  // its last's (the nominal fps when it has one frame or no duration).
  double average_fps = 0;
  // Whether its frames come at a rate that varies: some interval between
  // two frames more than 1.25 times another (a phone halving its rate in low
  // light; not the jitter of a millisecond around a steady rate).
  bool rate_varies = false;
};

// Opens `path`, checks its format against `limits`, and decodes every frame
// (without converting any) to count them. Returns kNotFound if there is no
// such file; kInvalidArgument, with a message naming the file, if it is not
// a regular file, is empty, is not a video FFmpeg can open, has no frame rate
// or a frame size outside the limits, has more than `limits.frames_max`
// frames, or if not even its first frame decodes; kFailedPrecondition
// ("probing stopped") soon after `stop` is requested, which is checked
// before each frame is decoded.
Result<VideoInfo> probe(const std::string& path, const VideoLimits& limits = {},
                        std::stop_token stop = {});

// A copy of a movie made for going to any frame fast (write_proxy()): every
// frame, in order, re-encoded as H.264 with a key frame every `key_every`
// frames and no B-frames, so that any frame decodes after at most
// key_every - 1 others, whatever the movie's own key frames (phones write
// one every few seconds). Lossy: its frames look as the movie's, not to the
// bit (crf: libx264's quality, 0 lossless .. 51; about 18 to 23 look the
// same). Encoded at libx264's fastest preset (a long movie's proxy takes
// about as long as decoding it twice), tuned for fast decoding.
struct ProxyOptions {
  int key_every = 4;
  int crf = 20;
};

// What write_proxy() wrote: its frames, and their timestamps (frame n's is
// n * pts_per_frame, in time_base_num / time_base_den s).
struct ProxyInfo {
  int64_t frames = 0;
  int time_base_num = 1;
  int time_base_den = 1;
  int64_t pts_per_frame = 1;
};

// Writes the proxy of the video at `path` to `out` (MP4): its frames as
// FrameReader numbers them. The frame count is the video's (compare it with
// probe()'s). kFailedPrecondition for frames of an odd width or height
// (4:2:0 cannot hold them) or once `stop` is requested; probe()'s errors
// for the video; kUnavailable if `out` cannot be written.
Result<ProxyInfo> write_proxy(const std::string& path, const std::string& out,
                              const ProxyOptions& options = {}, const VideoLimits& limits = {},
                              std::stop_token stop = {});

// The times of a proxy write_proxy() wrote, for FrameReader::seek().
FrameTimes proxy_times(const ProxyInfo& proxy, int key_every);

// A decoded frame, row after row, 8 bits a channel: 3 channels in blue,
// green, red order, or 1 (grey). Not owned: it belongs to the FrameReader
// that handed it out.
struct FrameImage {
  const uint8_t* pixels = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;      // 3 or 1
  size_t row_bytes = 0;  // from the start of one row to the next, >= width * channels
};

// Reads one video from its first frame to its last, once.
class FrameReader {
 public:
  // Opens `path` and checks its format as probe() does, without decoding.
  // Returns probe()'s errors, except those that need decoding.
  static Result<std::unique_ptr<FrameReader>> open(const std::string& path,
                                                   const VideoLimits& limits = {});
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  const VideoFormat& format() const;

  // Decodes the next frame. Returns false at the end of the video (where
  // decoding stops, for whatever reason). With `want_pixels` the frame is
  // also converted from the codec's pixel format for image(); without, the
  // conversion is skipped, which saves most of the work besides decoding
  // itself, for frames nobody looks at. kInvalidArgument if the frame has
  // another size than the video's format, or if it is frame number
  // `limits.frames_max`.
  Result<bool> next(bool want_pixels);

  // The number of the frame next() decoded last; -1 before the first.
  int64_t frame() const;

  // The time of the frame next() decoded last, from the video's first
  // frame's, in microseconds. REQUIRES: frame() >= 0.
  int64_t time_us() const;

  // Decodes frame `frame`, as next() would have from the start, but from the
  // key frame at or before it (or on from the frame decoded last, when that
  // is nearer; or not at all when it is one of the frames kept,
  // VideoLimits::frames_kept), using the times probe() noted for this file. Afterwards
  // frame() is `frame` and next() goes on from it. False if the video has
  // no such frame; kInvalidArgument if `times` are not seekable() or do not
  // match the file (a frame not where they say).
  Result<bool> seek(int64_t frame, const FrameTimes& times, bool want_pixels);

  // Frames decoded since the reader opened, whether handed out or passed
  // over on the way to a seek()'s frame (not the kept frames given again).
  int64_t frames_decoded() const;

  // The frame next() decoded last. Valid until the next call to next().
  // REQUIRES: the last call to next() had `want_pixels` and returned true.
  FrameImage image() const;

 private:
  friend Result<VideoInfo> probe(const std::string& path, const VideoLimits& limits,
                                 std::stop_token stop);
  struct Impl;
  explicit FrameReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::tracer
