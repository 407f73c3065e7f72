// FrameReader and probe() (tracer/video.h), on the decoder of the codecs
// module (tracer/codecs.h).
#include "tracer/video.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "tracer/codecs.h"

namespace leasehold::tracer {

namespace {

// `ticks` of num/den seconds in microseconds, rounded to the nearest.
int64_t ticks_to_us(int64_t ticks, int num, int den) {
  const __int128 scaled = static_cast<__int128>(ticks) * num * 1'000'000;
  const __int128 half = den / 2;
  return static_cast<int64_t>(scaled >= 0 ? (scaled + half) / den : (scaled - half) / den);
}

}  // namespace

int64_t FrameTimes::us(int64_t n) const {
  return ticks_to_us(pts[static_cast<size_t>(n)] - pts.front(), time_base_num, time_base_den);
}

bool FrameTimes::seekable() const {
  if (pts.empty() || keys.empty() || keys.front() != 0) return false;
  if (time_base_num <= 0 || time_base_den <= 0) return false;
  return std::adjacent_find(pts.begin(), pts.end(), std::greater_equal<int64_t>()) == pts.end();
}

struct FrameReader::Impl {
  std::string path;
  std::unique_ptr<codecs::Decoder> decoder;
  int64_t frame = -1;     // the number of the frame decoded last
  int64_t origin = 0;     // frame 0's timestamp
  bool has_pixels = false;

  // The decoder's next frame, counted.
  Result<bool> decode(bool want_pixels) {
    has_pixels = false;
    LEASEHOLD_ASSIGN_OR_RETURN(const bool more, decoder->next(want_pixels));
    if (!more) return false;
    has_pixels = want_pixels;
    return true;
  }

  Status mismatch(int64_t wanted) const {
    return invalid_argument(
        fmt::format("frame {} of '{}' is not where the times probed for it say", wanted, path));
  }
};

FrameReader::FrameReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FrameReader::~FrameReader() = default;

Result<std::unique_ptr<FrameReader>> FrameReader::open(const std::string& path,
                                                       const VideoLimits& limits) {
  LEASEHOLD_ASSIGN_OR_RETURN(const codecs::Codecs* codecs, codecs::load());
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  LEASEHOLD_ASSIGN_OR_RETURN(impl->decoder, codecs->open_video(path, limits));
  return std::unique_ptr<FrameReader>(new FrameReader(std::move(impl)));
}

const VideoFormat& FrameReader::format() const { return impl_->decoder->format(); }

int64_t FrameReader::frame() const { return impl_->frame; }

int64_t FrameReader::frames_decoded() const { return impl_->decoder->frames_decoded(); }

int64_t FrameReader::time_us() const {
  const VideoFormat& f = format();
  return ticks_to_us(impl_->decoder->pts() - impl_->origin, f.time_base_num, f.time_base_den);
}

Result<bool> FrameReader::next(bool want_pixels) {
  LEASEHOLD_ASSIGN_OR_RETURN(const bool more, impl_->decode(want_pixels));
  if (!more) return false;
  if (++impl_->frame == 0) impl_->origin = impl_->decoder->pts();
  return true;
}

Result<bool> FrameReader::seek(int64_t frame, const FrameTimes& times, bool want_pixels) {
  Impl& r = *impl_;
  if (!times.seekable()) {
    return invalid_argument(fmt::format("the times given for '{}' cannot be sought in", r.path));
  }
  if (frame < 0) return invalid_argument(fmt::format("no frame {}", frame));
  if (frame >= static_cast<int64_t>(times.pts.size())) return false;
  if (frame == r.frame && (r.has_pixels || !want_pixels)) return true;
  if (frame == r.frame) {
    LEASEHOLD_RETURN_IF_ERROR(r.decoder->convert());
    r.has_pixels = true;
    return true;
  }
  // One of the frames the reader kept (VideoLimits::frames_kept): a step
  // back decodes nothing.
  if (r.decoder->recall(times.pts[static_cast<size_t>(frame)])) {
    r.frame = frame;
    r.has_pixels = false;
    if (want_pixels) {
      LEASEHOLD_RETURN_IF_ERROR(r.decoder->convert());
      r.has_pixels = true;
    }
    return true;
  }
  // The key frame at or before it.
  auto key = std::upper_bound(times.keys.begin(), times.keys.end(), frame) - 1;
  // On from the frame decoded last when that is at or after the key frame:
  // no more to decode than from the key frame, and often much less.
  if (r.frame >= *key && r.frame < frame) {
    while (r.frame < frame) {
      LEASEHOLD_ASSIGN_OR_RETURN(const bool more, next(want_pixels && r.frame + 1 == frame));
      if (!more) return r.mismatch(frame);
    }
    if (r.decoder->pts() != times.pts[static_cast<size_t>(frame)]) return r.mismatch(frame);
    return true;
  }
  const int64_t target = times.pts[static_cast<size_t>(frame)];
  for (;;) {
    LEASEHOLD_RETURN_IF_ERROR(r.decoder->seek(times.pts[static_cast<size_t>(*key)]));
    r.frame = -1;
    r.origin = times.pts.front();
    bool first = true;
    bool overshot = false;
    for (;;) {
      LEASEHOLD_ASSIGN_OR_RETURN(const bool more, r.decode(false));
      if (!more) return r.mismatch(frame);
      const int64_t pts = r.decoder->pts();
      if (pts > target) {
        overshot = first;
        if (!overshot) return r.mismatch(frame);
        break;
      }
      first = false;
      // Each frame decoded on the way is numbered by its time.
      const auto at = std::lower_bound(times.pts.begin(), times.pts.end(), pts);
      if (at != times.pts.end() && *at == pts) r.frame = at - times.pts.begin();
      if (pts == target) {
        if (want_pixels) {
          LEASEHOLD_RETURN_IF_ERROR(r.decoder->convert());
          r.has_pixels = true;
        }
        return true;
      }
    }
    // The demuxer's key frame came after the one the times name (its index
    // disagrees with what the decoder called key): one further back.
    if (key == times.keys.begin()) return r.mismatch(frame);
    --key;
  }
}

FrameImage FrameReader::image() const { return impl_->decoder->image(); }

Result<ProxyInfo> write_proxy(const std::string& path, const std::string& out,
                              const ProxyOptions& options, const VideoLimits& limits,
                              std::stop_token stop) {
  if (options.key_every < 1 || options.crf < 0 || options.crf > 51) {
    return invalid_argument("a proxy needs key_every >= 1 and crf 0..51");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const codecs::Codecs* codecs, codecs::load());
  return codecs->write_proxy(path, out, options, limits, std::move(stop));
}

FrameTimes proxy_times(const ProxyInfo& proxy, int key_every) {
  FrameTimes t{.time_base_num = proxy.time_base_num,
               .time_base_den = proxy.time_base_den,
               .pts = {},
               .keys = {}};
  t.pts.reserve(static_cast<size_t>(proxy.frames));
  for (int64_t n = 0; n < proxy.frames; ++n) {
    t.pts.push_back(n * proxy.pts_per_frame);
    if (n % key_every == 0) t.keys.push_back(n);
  }
  return t;
}

Result<VideoInfo> probe(const std::string& path, const VideoLimits& limits, std::stop_token stop) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<FrameReader> reader, FrameReader::open(path, limits));
  VideoInfo info;
  static_cast<VideoFormat&>(info) = reader->format();
  info.times.time_base_num = info.time_base_num;
  info.times.time_base_den = info.time_base_den;
  // The first frame is converted too: a file whose frames decode to nothing
  // usable is not a video, whatever its container says.
  LEASEHOLD_ASSIGN_OR_RETURN(bool more, reader->next(/*want_pixels=*/true));
  if (!more) {
    return invalid_argument(
        fmt::format("'{}' is not a video that can be read: no frame decodes", path));
  }
  const codecs::Decoder& decoder = *reader->impl_->decoder;
  while (more) {
    info.times.pts.push_back(decoder.pts());
    if (decoder.key()) info.times.keys.push_back(reader->frame());
    if (stop.stop_requested()) return failed_precondition("probing stopped");
    LEASEHOLD_ASSIGN_OR_RETURN(more, reader->next(/*want_pixels=*/false));
  }
  info.frame_count = reader->frame() + 1;
  info.average_fps = info.fps;
  if (info.frame_count > 1) {
    const int64_t span_us = info.times.us(info.frame_count - 1);
    if (span_us > 0) info.average_fps = static_cast<double>(info.frame_count - 1) * 1e6 / span_us;
    int64_t shortest = INT64_MAX;
    int64_t longest = 0;
    for (int64_t n = 1; n < info.frame_count; ++n) {
      const int64_t step = info.times.us(n) - info.times.us(n - 1);
      shortest = std::min(shortest, step);
      longest = std::max(longest, step);
    }
    info.rate_varies = shortest > 0 && longest * 4 > shortest * 5;
  }
  return info;
}

}  // namespace leasehold::tracer
