// Video files for the movie tracer: probe() checks that a file is a video
// the tracer can read and counts its frames by decoding them; FrameReader
// decodes a video sequentially, frame after frame, and hands out the pixels
// of the frames it is asked for.
//
// Videos are read with OpenCV's FFmpeg backend only, and from regular files
// only: a path is made absolute before FFmpeg sees it, so that it is never
// taken for a protocol (`http:`, `concat:`). Frames are numbered from 0 in
// decoding order. A container's own frame count is not trusted (it is often
// missing, and wrong for a truncated file): the frame count is the number of
// frames that decode, and a video ends where decoding stops.
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

#include "leasehold/status.h"

namespace leasehold::tracer {

// What the tracer agrees to read. A video outside them is refused with
// kInvalidArgument.
struct VideoLimits {
  int64_t frames_max = 100'000;  // about an hour at 25 frames per second
  int side_max_px = 4096;        // width and height
  double fps_max = 1000;
};

// What the container says about a video.
struct VideoFormat {
  double fps = 0;                    // frames per second, > 0
  int width = 0;                     // px
  int height = 0;                    // px
  std::optional<std::string> codec;  // the stream's four-character code ("MJPG", "avc1"), if any
};

// A video as probe() found it: its format and its number of decodable frames.
struct VideoInfo : VideoFormat {
  int64_t frame_count = 0;  // frames 0 .. frame_count - 1 decode
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

  // The frame next() decoded last. Valid until the next call to next().
  // REQUIRES: the last call to next() had `want_pixels` and returned true.
  FrameImage image() const;

 private:
  struct Impl;
  explicit FrameReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::tracer
