// The tracer's video and image codecs: FFmpeg's libraries (libavformat,
// libavcodec, libswscale) behind FrameReader, OpenCV's image codecs
// (imgcodecs) behind encode_jpeg(), and OpenCV's videoio behind
// write_synthetic_movie().
//
// Those two OpenCV modules bring some 250 shared libraries with them
// (FFmpeg, GStreamer, GDAL among them), whose loading costs about 0.2 s of
// CPU. So they live in a module of their own, libleasehold_codecs.so, which
// load() opens the first time a movie is read or written: a command that
// never touches a movie (`leasehold lease acquire`, `conn add`, a worker of
// the stream fleet) starts without them.
//
// The module is found beside the binary, where `cmake --install` puts it
// (<libdir>/leasehold/, as seen from <bindir>), or else where this build
// tree made it. Its entry point returns the table below; a table of another
// build (another kCodecsVersion) is refused.
//
// Threads: load() may be called from any thread; the module is loaded once.
// A Decoder is used from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/status.h"
#include "tracer/synthetic_movie.h"
#include "tracer/video.h"

namespace leasehold::tracer::codecs {

// One video being decoded: FrameReader's work (see tracer/video.h for what
// each call does and returns).
class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual const VideoFormat& format() const = 0;
  virtual Result<bool> next(bool want_pixels) = 0;
  // Frames next() returned since the video was opened or last seek()ed, - 1.
  virtual int64_t frame() const = 0;
  // Frames decoded since the video was opened (not those recall() gave
  // again).
  virtual int64_t frames_decoded() const = 0;
  virtual FrameImage image() const = 0;
  // The timestamp of the frame next() decoded last, in the stream's time
  // base (VideoFormat), and whether decoding can start at it (a key frame).
  virtual int64_t pts() const = 0;
  virtual bool key() const = 0;
  // Makes next() decode from the key frame at or before `pts`.
  virtual Status seek(int64_t pts) = 0;
  // Makes the kept frame (VideoLimits::frames_kept) of timestamp `pts` the
  // one next() gave last, next() going on through the kept frames after it;
  // false, changing nothing, if no kept frame has it.
  virtual bool recall(int64_t pts) = 0;
  // Converts the frame next() decoded last, when it was decoded without its
  // pixels, for image().
  virtual Status convert() = 0;
};

// Changes whenever the table or a type it passes changes.
inline constexpr int kCodecsVersion = 4;

struct Codecs {
  int version = kCodecsVersion;
  // FrameReader::open(): the file checked and opened, its format read.
  Result<std::unique_ptr<Decoder>> (*open_video)(const std::string& path,
                                                 const VideoLimits& limits) = nullptr;
  // encode_jpeg() of an image and quality already checked.
  Result<std::string> (*encode_jpeg)(const FrameImage& image, int quality) = nullptr;
  // write_synthetic_movie() of a movie already checked.
  Status (*write_movie)(const std::string& path, const SyntheticMovie& movie) = nullptr;
  // write_proxy().
  Result<ProxyInfo> (*write_proxy)(const std::string& path, const std::string& out,
                                   const ProxyOptions& options, const VideoLimits& limits,
                                   std::stop_token stop) = nullptr;
};

// The module's entry point: extern "C" const Codecs* leasehold_tracer_codecs().
inline constexpr char kEntryPoint[] = "leasehold_tracer_codecs";
using EntryPoint = const Codecs* (*)();

// The codecs, loaded on the first call. kUnavailable, naming the module and
// why (not found, or dlopen's error), if they cannot be loaded; the same
// answer on every later call.
Result<const Codecs*> load();

}  // namespace leasehold::tracer::codecs
