// FFmpeg's demuxer and decoder behind a codecs::Decoder (video_decoder.cc),
// which the proxy writer (proxy_writer.cc) reads frames with too: private to
// the codecs module, the one place FFmpeg's headers are included.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tracer/codecs.h"

namespace leasehold::tracer::codecs {

struct FormatCloser {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecCloser {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct ScaleFreer {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

// FrameReader's work on FFmpeg's demuxer and decoder.
class AvDecoder final : public Decoder {
 public:
  AvDecoder(std::string path, VideoLimits limits) : path_(std::move(path)), limits_(limits) {}

  // Opens the file and its video stream's decoder, and checks its format.
  Status open();

  const VideoFormat& format() const override { return format_; }
  int64_t frame() const override { return decoded_ - 1; }
  int64_t frames_decoded() const override { return decoded_total_; }
  int64_t pts() const override { return pts_; }
  bool key() const override { return key_; }
  Result<bool> next(bool want_pixels) override;
  Status convert() override;
  Status seek(int64_t pts) override;
  bool recall(int64_t pts) override;
  FrameImage image() const override;

  // The frame next() decoded last, as the decoder gave it.
  const AVFrame& av_frame() const { return *current_; }

 private:
  bool send_next_packet();
  Status convert_frame();

  const std::string path_;
  const VideoLimits limits_;
  VideoFormat format_;
  std::unique_ptr<AVFormatContext, FormatCloser> format_ctx_;
  std::unique_ptr<AVCodecContext, CodecCloser> codec_ctx_;
  std::unique_ptr<AVFrame, FrameFreer> frame_;
  // The frame next() gave last: frame_, or one of kept_.
  const AVFrame* current_ = nullptr;
  // The last VideoLimits::frames_kept frames decoded since the last seek
  // (references to the decoder's buffers), and which of them next() gives
  // next after a recall() (-1: none, decode).
  std::deque<std::unique_ptr<AVFrame, FrameFreer>> kept_;
  int replay_ = -1;
  std::unique_ptr<AVPacket, PacketFreer> packet_;
  std::unique_ptr<SwsContext, ScaleFreer> scale_;
  AVStream* stream_ = nullptr;
  int stream_index_ = -1;
  bool draining_ = false;
  int64_t decoded_ = 0;  // frames next() returned since the start or the last seek
  int64_t decoded_total_ = 0;
  int64_t pts_ = AV_NOPTS_VALUE;
  bool key_ = false;
  bool has_pixels_ = false;
  std::vector<uint8_t> pixels_;  // the converted frame; reused from frame to frame
  int channels_ = 3;
  size_t row_bytes_ = 0;
};

}  // namespace leasehold::tracer::codecs
