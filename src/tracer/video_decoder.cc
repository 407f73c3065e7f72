// The video decoder of the codecs module (tracer/codecs.h): FFmpeg's own
// libraries (libavformat, libavcodec, libswscale) behind FrameReader.
// Nothing else in the tracer opens a video.
//
// FFmpeg directly rather than through OpenCV's videoio: the tracer needs
// each frame's presentation time and whether decoding can start at it, and
// a seek to such a frame, which OpenCV's capture only estimates from the
// average frame rate (CAP_PROP_POS_FRAMES is a time, frame / fps, and wrong
// for a movie whose rate varies).
//
// Decoding follows FFmpeg's send/receive API (libavcodec/avcodec.h, "Decoding
// and encoding"): packets of the video stream are sent until the decoder has
// a frame to give; at the end of the file the decoder is drained. A packet
// the decoder refuses is skipped, as FFmpeg's own tools do; a stream that
// stops giving frames ends the video.
#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <utility>
#include <vector>

#include "tracer/av_decoder.h"
#include "tracer/codecs_module.h"

extern "C" {
#include <libavutil/log.h>
}

namespace leasehold::tracer::codecs {
namespace {

// The stream's four-character code, if it has one that reads as text, else
// the codec's short name ("h264").
std::optional<std::string> codec_text(const AVCodecParameters& par) {
  std::string text;
  for (int i = 0; i < 4 && par.codec_tag != 0; ++i) {
    const char c = static_cast<char>((par.codec_tag >> (8 * i)) & 0xFF);
    if (c < 0x20 || c > 0x7E) {
      text.clear();
      break;
    }
    text.push_back(c);
  }
  if (!text.empty()) return text;
  if (const AVCodecDescriptor* d = avcodec_descriptor_get(par.codec_id)) return std::string(d->name);
  return std::nullopt;
}

}  // namespace

Status AvDecoder::open() {
  // FFmpeg's messages would go to standard error, in its own words; the
  // callers say what went wrong in theirs.
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_QUIET); });
  std::error_code error;
  const std::filesystem::path file = std::filesystem::absolute(path_, error);
  if (error) return invalid_argument(fmt::format("'{}' is not a usable path", path_));
  const auto status = std::filesystem::status(file, error);
  if (!std::filesystem::exists(status)) return not_found(fmt::format("no file '{}'", path_));
  if (!std::filesystem::is_regular_file(status)) {
    return invalid_argument(fmt::format("'{}' is not a regular file", path_));
  }
  if (std::filesystem::file_size(file, error) == 0 || error) {
    return invalid_argument(fmt::format("'{}' is empty, not a video", path_));
  }
  const Status not_video = invalid_argument(fmt::format("'{}' is not a video that can be read", path_));
  // Only the file itself: a playlist or a reference in it naming another
  // protocol (http:, concat:, another file's path by a playlist) is refused.
  AVDictionary* options = nullptr;
  av_dict_set(&options, "protocol_whitelist", "file", 0);
  AVFormatContext* format = nullptr;
  const int opened = avformat_open_input(&format, ("file:" + file.string()).c_str(), nullptr, &options);
  av_dict_free(&options);
  if (opened < 0) return not_video;
  format_ctx_.reset(format);
  if (avformat_find_stream_info(format, nullptr) < 0) return not_video;
  const AVCodec* codec = nullptr;
  stream_index_ = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (stream_index_ < 0 || codec == nullptr) return not_video;
  stream_ = format->streams[stream_index_];
  // The other streams (sound, subtitles, data) are not even read.
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    if (static_cast<int>(i) != stream_index_) format->streams[i]->discard = AVDISCARD_ALL;
  }
  const AVCodecParameters& par = *stream_->codecpar;
  if (!(par.width >= 1 && par.height >= 1 && par.width <= limits_.side_max_px &&
        par.height <= limits_.side_max_px)) {
    return invalid_argument(fmt::format("'{}' has frames of {}x{} px; at most {}x{} are read",
                                        path_, par.width, par.height, limits_.side_max_px,
                                        limits_.side_max_px));
  }
  format_.width = par.width;
  format_.height = par.height;
  format_.codec = codec_text(par);
  const AVRational rate = av_guess_frame_rate(format, stream_, nullptr);
  format_.fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0;
  if (!std::isfinite(format_.fps) || format_.fps <= 0 || format_.fps > limits_.fps_max) {
    return invalid_argument(
        fmt::format("'{}' has no usable frame rate ({} frames/s)", path_, format_.fps));
  }
  format_.time_base_num = stream_->time_base.num;
  format_.time_base_den = stream_->time_base.den;
  if (format_.time_base_num <= 0 || format_.time_base_den <= 0) return not_video;

  codec_ctx_.reset(avcodec_alloc_context3(codec));
  if (!codec_ctx_ || avcodec_parameters_to_context(codec_ctx_.get(), &par) < 0) return not_video;
  codec_ctx_->pkt_timebase = stream_->time_base;
  // As many threads as FFmpeg finds cores for (it caps them itself).
  codec_ctx_->thread_count = 0;
  if (avcodec_open2(codec_ctx_.get(), codec, nullptr) < 0) return not_video;
  frame_.reset(av_frame_alloc());
  packet_.reset(av_packet_alloc());
  if (!frame_ || !packet_) return resource_exhausted("out of memory opening a video");
  return Status();
}

Result<bool> AvDecoder::next(bool want_pixels) {
  has_pixels_ = false;
  // Going on through the kept frames after a recall(), up to the last one
  // decoded.
  if (replay_ >= 0) {
    ++replay_;
    current_ = kept_[static_cast<size_t>(replay_)].get();
    if (static_cast<size_t>(replay_) + 1 == kept_.size()) replay_ = -1;
    pts_ = current_->pts;
    key_ = current_->key_frame != 0;
    if (!want_pixels) return true;
    LEASEHOLD_RETURN_IF_ERROR(convert());
    return true;
  }
  for (;;) {
    const int got = avcodec_receive_frame(codec_ctx_.get(), frame_.get());
    if (got == 0) break;
    if (got != AVERROR(EAGAIN)) return false;  // drained, or the decoder gave up: the end
    if (!send_next_packet()) return false;
  }
  if (decoded_ >= limits_.frames_max) {
    return invalid_argument(fmt::format("'{}' has more than {} frames", path_, limits_.frames_max));
  }
  ++decoded_;
  ++decoded_total_;
  // The frame's presentation time: its own, else FFmpeg's best guess,
  // else one frame after the last (a frame's duration, or the nominal rate).
  int64_t pts = frame_->best_effort_timestamp;
  if (pts == AV_NOPTS_VALUE) pts = frame_->pts;
  if (pts == AV_NOPTS_VALUE) {
    pts = pts_ == AV_NOPTS_VALUE ? 0
                                 : pts_ + std::max<int64_t>(
                                              1, av_rescale_q(1, av_inv_q(av_guess_frame_rate(
                                                                     format_ctx_.get(), stream_, nullptr)),
                                                              stream_->time_base));
  }
  pts_ = pts;
  frame_->pts = pts;  // as a kept frame says it
  key_ = frame_->key_frame != 0;
  current_ = frame_.get();
  if (frame_->width != format_.width || frame_->height != format_.height) {
    return invalid_argument(fmt::format("frame {} of '{}' is {}x{} px, not {}x{} as the video",
                                        frame(), path_, frame_->width, frame_->height,
                                        format_.width, format_.height));
  }
  if (limits_.frames_kept > 0) {
    // A new reference to the decoder's buffers, not a copy of the pixels.
    std::unique_ptr<AVFrame, FrameFreer> kept(av_frame_clone(frame_.get()));
    if (!kept) return resource_exhausted("out of memory keeping a frame");
    if (static_cast<int>(kept_.size()) >= limits_.frames_kept) kept_.pop_front();
    kept_.push_back(std::move(kept));
    current_ = kept_.back().get();
  }
  if (!want_pixels) return true;
  LEASEHOLD_RETURN_IF_ERROR(convert());
  return true;
}

Status AvDecoder::convert() {
  if (has_pixels_) return Status();
  LEASEHOLD_RETURN_IF_ERROR(convert_frame());
  has_pixels_ = true;
  return Status();
}

bool AvDecoder::recall(int64_t pts) {
  for (size_t i = 0; i < kept_.size(); ++i) {
    if (kept_[i]->pts != pts) continue;
    current_ = kept_[i].get();
    replay_ = i + 1 == kept_.size() ? -1 : static_cast<int>(i);
    pts_ = pts;
    key_ = current_->key_frame != 0;
    has_pixels_ = false;
    return true;
  }
  return false;
}

Status AvDecoder::seek(int64_t pts) {
  // Backward: the key frame at or before `pts` (the demuxer's index of
  // sync samples); the caller decodes forward from there.
  if (av_seek_frame(format_ctx_.get(), stream_index_, pts, AVSEEK_FLAG_BACKWARD) < 0) {
    return invalid_argument(fmt::format("'{}' cannot seek to time {}", path_, pts));
  }
  avcodec_flush_buffers(codec_ctx_.get());
  kept_.clear();
  replay_ = -1;
  current_ = nullptr;
  draining_ = false;
  decoded_ = 0;  // frames_max bounds the frames decoded after each start
  has_pixels_ = false;
  return Status();
}

FrameImage AvDecoder::image() const {
  assert(has_pixels_ && "image() needs a frame decoded with its pixels");
  return FrameImage{pixels_.data(), format_.width, format_.height, channels_, row_bytes_};
}

// Sends the decoder the next packet of the video stream, or, at the end
// of the file, the empty packet that drains it. False once drained.
bool AvDecoder::send_next_packet() {
  if (draining_) return false;
  for (;;) {
    const int read = av_read_frame(format_ctx_.get(), packet_.get());
    if (read < 0) {
      // The end, or a file cut short: what the decoder holds is still given.
      draining_ = true;
      return avcodec_send_packet(codec_ctx_.get(), nullptr) == 0;
    }
    const bool ours = packet_->stream_index == stream_index_;
    const int sent = ours ? avcodec_send_packet(codec_ctx_.get(), packet_.get()) : 0;
    av_packet_unref(packet_.get());
    if (!ours) continue;
    // A packet the decoder refuses (a damaged one) is skipped, as
    // FFmpeg's tools skip it; EAGAIN cannot happen, since frames are
    // received until none is left before a packet is sent.
    if (sent == 0 || sent == AVERROR_INVALIDDATA) return true;
    return false;
  }
}

// The frame into pixels_: blue, green, red (grey stays grey), 8 bits.
Status AvDecoder::convert_frame() {
  const auto source = static_cast<AVPixelFormat>(current_->format);
  const bool grey = source == AV_PIX_FMT_GRAY8;
  const AVPixelFormat target = grey ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_BGR24;
  channels_ = grey ? 1 : 3;
  scale_.reset(sws_getCachedContext(scale_.release(), format_.width, format_.height, source,
                                    format_.width, format_.height, target, SWS_BILINEAR, nullptr,
                                    nullptr, nullptr));
  if (!scale_) {
    return invalid_argument(
        fmt::format("frame {} of '{}' has an unexpected pixel format", frame(), path_));
  }
  row_bytes_ = static_cast<size_t>(format_.width) * static_cast<size_t>(channels_);
  pixels_.resize(row_bytes_ * static_cast<size_t>(format_.height));
  uint8_t* planes[4] = {pixels_.data(), nullptr, nullptr, nullptr};
  int strides[4] = {static_cast<int>(row_bytes_), 0, 0, 0};
  if (sws_scale(scale_.get(), current_->data, current_->linesize, 0, format_.height, planes, strides) !=
      format_.height) {
    return invalid_argument(fmt::format("frame {} of '{}' could not be converted", frame(), path_));
  }
  return Status();
}

Result<std::unique_ptr<Decoder>> open_video(const std::string& path, const VideoLimits& limits) {
  auto decoder = std::make_unique<AvDecoder>(path, limits);
  LEASEHOLD_RETURN_IF_ERROR(decoder->open());
  return std::unique_ptr<Decoder>(std::move(decoder));
}

}  // namespace leasehold::tracer::codecs
