// The proxy writer of the codecs module (tracer/video.h, write_proxy()):
// every frame of a movie, decoded as FrameReader decodes them, re-encoded
// with libx264 (through libavcodec) as H.264 with a key frame (an IDR
// frame: nothing after it refers to anything before) every `key_every`
// frames and no B-frames, tuned for fast decoding, muxed as MP4 (libavformat).
#include <fmt/format.h>

#include "tracer/av_decoder.h"
#include "tracer/codecs_module.h"

extern "C" {
#include <libavutil/opt.h>
}

namespace leasehold::tracer::codecs {
namespace {

// Each frame's timestamp is its number times this, in 1/kProxyTimescale s:
// 30 frames a second, whatever the movie's rate (a proxy is never played).
constexpr int kProxyTimescale = 15360;
constexpr int64_t kPtsPerFrame = 512;

struct OutputCloser {
  void operator()(AVFormatContext* f) const {
    if (f == nullptr) return;
    if (f->pb != nullptr) avio_closep(&f->pb);
    avformat_free_context(f);
  }
};

std::string av_text(int error) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(error, buf, sizeof buf);
  return buf;
}

class ProxyWriter {
 public:
  ProxyWriter(const std::string& out, int width, int height) : out_(out), width_(width), height_(height) {}

  Status open(const ProxyOptions& o) {
    const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
    if (codec == nullptr) return unavailable("this FFmpeg has no H.264 encoder (libx264)");
    AVFormatContext* oc = nullptr;
    if (avformat_alloc_output_context2(&oc, nullptr, "mp4", out_.c_str()) < 0 || oc == nullptr) {
      return internal_error("cannot make an MP4 muxer");
    }
    output_.reset(oc);
    encoder_.reset(avcodec_alloc_context3(codec));
    if (!encoder_) return resource_exhausted("out of memory making an encoder");
    AVCodecContext& e = *encoder_;
    e.width = width_;
    e.height = height_;
    e.pix_fmt = AV_PIX_FMT_YUV420P;
    e.time_base = AVRational{1, kProxyTimescale};
    e.framerate = AVRational{30, 1};
    e.gop_size = o.key_every;
    e.max_b_frames = 0;
    e.thread_count = 0;
    if (oc->oformat->flags & AVFMT_GLOBALHEADER) e.flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary* options = nullptr;
    av_dict_set(&options, "preset", "ultrafast", 0);
    av_dict_set(&options, "tune", "fastdecode", 0);
    av_dict_set(&options, "crf", std::to_string(o.crf).c_str(), 0);
    // Exactly every key_every frames, each an IDR frame (no scene cuts in
    // between, no open GOPs): the key frames proxy_times() lists.
    const std::string params =
        fmt::format("keyint={0}:min-keyint={0}:scenecut=0:open-gop=0", o.key_every);
    av_dict_set(&options, "x264-params", params.c_str(), 0);
    const int opened = avcodec_open2(encoder_.get(), codec, &options);
    av_dict_free(&options);
    if (opened < 0) return internal_error("libx264 refused the proxy's settings: " + av_text(opened));
    stream_ = avformat_new_stream(oc, nullptr);
    if (stream_ == nullptr) return resource_exhausted("out of memory making a stream");
    stream_->time_base = e.time_base;
    if (avcodec_parameters_from_context(stream_->codecpar, encoder_.get()) < 0) {
      return internal_error("cannot describe the proxy's stream");
    }
    if (avio_open(&oc->pb, out_.c_str(), AVIO_FLAG_WRITE) < 0) {
      return unavailable(fmt::format("cannot write '{}'", out_));
    }
    const int header = avformat_write_header(oc, nullptr);
    if (header < 0) return internal_error("cannot write the proxy's header: " + av_text(header));
    // The muxer may keep another time base: a frame must still be a whole
    // number of its units, the same for every frame.
    const AVRational tb = stream_->time_base;
    per_frame_ = av_rescale_q(kPtsPerFrame, e.time_base, tb);
    if (per_frame_ <= 0 ||
        static_cast<__int128>(per_frame_) * tb.num * kProxyTimescale !=
            static_cast<__int128>(kPtsPerFrame) * tb.den) {
      return internal_error(fmt::format("the MP4 muxer's time base {}/{} does not fit whole frames",
                                        tb.num, tb.den));
    }
    packet_.reset(av_packet_alloc());
    yuv_.reset(av_frame_alloc());
    if (!packet_ || !yuv_) return resource_exhausted("out of memory");
    yuv_->format = AV_PIX_FMT_YUV420P;
    yuv_->width = width_;
    yuv_->height = height_;
    if (av_frame_get_buffer(yuv_.get(), 0) < 0) return resource_exhausted("out of memory");
    return Status();
  }

  // Encodes `frame` as frame number `n`.
  Status add(const AVFrame& frame, int64_t n) {
    if (av_frame_make_writable(yuv_.get()) < 0) return resource_exhausted("out of memory");
    scale_.reset(sws_getCachedContext(scale_.release(), frame.width, frame.height,
                                      static_cast<AVPixelFormat>(frame.format), width_, height_,
                                      AV_PIX_FMT_YUV420P, SWS_BILINEAR, nullptr, nullptr, nullptr));
    if (!scale_) return invalid_argument("a frame's pixel format cannot be converted");
    sws_scale(scale_.get(), frame.data, frame.linesize, 0, frame.height, yuv_->data,
              yuv_->linesize);
    yuv_->pts = n * kPtsPerFrame;
    return send(yuv_.get());
  }

  // Drains the encoder and writes the index. The proxy's time base.
  Result<AVRational> finish() {
    LEASEHOLD_RETURN_IF_ERROR(send(nullptr));
    const int written = av_write_trailer(output_.get());
    if (written < 0) return unavailable("cannot finish the proxy: " + av_text(written));
    return stream_->time_base;
  }

  int64_t per_frame() const { return per_frame_; }

 private:
  Status send(AVFrame* frame) {
    int sent = avcodec_send_frame(encoder_.get(), frame);
    if (sent < 0) return internal_error("libx264 refused a frame: " + av_text(sent));
    for (;;) {
      const int got = avcodec_receive_packet(encoder_.get(), packet_.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return Status();
      if (got < 0) return internal_error("libx264 failed: " + av_text(got));
      av_packet_rescale_ts(packet_.get(), encoder_->time_base, stream_->time_base);
      // Every frame lasts one frame, the last too: the MP4 muxer's edit list
      // spans the durations, and a last frame of none would fall outside it
      // (its demuxer would then mark it to be discarded).
      packet_->duration = per_frame_;
      packet_->stream_index = stream_->index;
      const int muxed = av_interleaved_write_frame(output_.get(), packet_.get());
      if (muxed < 0) return unavailable(fmt::format("cannot write '{}': {}", out_, av_text(muxed)));
    }
  }

  const std::string out_;
  const int width_;
  const int height_;
  std::unique_ptr<AVFormatContext, OutputCloser> output_;
  std::unique_ptr<AVCodecContext, CodecCloser> encoder_;
  std::unique_ptr<AVPacket, PacketFreer> packet_;
  std::unique_ptr<AVFrame, FrameFreer> yuv_;
  std::unique_ptr<SwsContext, ScaleFreer> scale_;
  AVStream* stream_ = nullptr;
  int64_t per_frame_ = 0;
};

}  // namespace

Result<ProxyInfo> write_proxy(const std::string& path, const std::string& out,
                              const ProxyOptions& options, const VideoLimits& limits,
                              std::stop_token stop) {
  AvDecoder decoder(path, limits);
  LEASEHOLD_RETURN_IF_ERROR(decoder.open());
  const VideoFormat& f = decoder.format();
  // 4:2:0 needs even sides; a proxy a pixel smaller would not be the
  // movie's frames pixel for pixel.
  if (f.width % 2 != 0 || f.height % 2 != 0) {
    return failed_precondition(fmt::format("frames of {}x{} px have no proxy (odd sides)", f.width, f.height));
  }
  ProxyWriter writer(out, f.width, f.height);
  LEASEHOLD_RETURN_IF_ERROR(writer.open(options));
  int64_t n = 0;
  for (;; ++n) {
    if (stop.stop_requested()) return failed_precondition("writing the proxy stopped");
    LEASEHOLD_ASSIGN_OR_RETURN(const bool more, decoder.next(/*want_pixels=*/false));
    if (!more) break;
    LEASEHOLD_RETURN_IF_ERROR(writer.add(decoder.av_frame(), n));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const AVRational tb, writer.finish());
  return ProxyInfo{.frames = n,
                   .time_base_num = tb.num,
                   .time_base_den = tb.den,
                   .pts_per_frame = writer.per_frame()};
}

}  // namespace leasehold::tracer::codecs
