// Tests for the tracer, on synthetic movies whose spots move on known
// sub-pixel paths: accuracy with lossy codecs, occlusions reported as lost,
// exactly the sampled frames, key frames after the trim start, stopping,
// and requests refused before anything is decoded.
#include "tracer/tracer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"
#include "tracer/video.h"

namespace leasehold::tracer {
namespace {

// Three spots moving on curved sub-pixel paths that never meet, at most about
// 1.5 px a frame.
SyntheticMovie three_spots(const std::string& fourcc) {
  SyntheticMovie m;
  m.width = 160;
  m.height = 120;
  m.frames = 40;
  m.fourcc = fourcc;
  m.spots = {
      Spot{.x0_px = 40.3,
           .y0_px = 38.6,
           .vx_px_per_frame = 0.73,
           .vy_px_per_frame = 0.11,
           .amplitude_px = 3,
           .period_frames = 23,
           .radius_px = 8},
      Spot{.x0_px = 112.8,
           .y0_px = 78.1,
           .vx_px_per_frame = -0.61,
           .vy_px_per_frame = 0.37,
           .amplitude_px = 2.5,
           .period_frames = 31,
           .radius_px = 8},
      Spot{.x0_px = 47.5,
           .y0_px = 88.2,
           .vx_px_per_frame = 0.41,
           .vy_px_per_frame = -0.29,
           .amplitude_px = 4,
           .period_frames = 17,
           .radius_px = 8},
  };
  return m;
}

// The markers a user would place on the spots on `frame`.
std::vector<Marker> markers_on(const SyntheticMovie& m, int64_t frame) {
  std::vector<Marker> markers;
  for (size_t i = 0; i < m.spots.size(); ++i) {
    SpotPosition at = spot_position(m.spots[i], frame);
    markers.push_back(
        Marker{"m" + std::to_string(i), "spot " + std::to_string(i), frame, at.x, at.y});
  }
  return markers;
}

double error_px(const SyntheticMovie& m, size_t spot, const TrackRow& row) {
  SpotPosition truth = spot_position(m.spots[spot], row.frame);
  return std::hypot(row.x - truth.x, row.y - truth.y);
}

class TracerTest : public ::testing::Test {
 protected:
  // Writes `m` and probes it.
  VideoInfo write(const SyntheticMovie& m, const std::string& name) {
    path_ = (dir_ / name).string();
    Status written = write_synthetic_movie(path_, m);
    EXPECT_TRUE(written.ok()) << written.to_string();
    Result<VideoInfo> info = probe(path_);
    EXPECT_TRUE(info.ok()) << info.status().to_string();
    return info.ok() ? *info : VideoInfo{};
  }

  // Traces `request` and keeps every frame reported.
  Status trace_all(const VideoInfo& info, const TraceRequest& request,
                   std::vector<TracedFrame>& frames) {
    return trace(path_, info, request, [&](const TracedFrame& frame) {
      frames.push_back(frame);
      return Status();
    });
  }

  const leasehold::testing::TempDir tmp_{"tracer_test_"};
  const std::filesystem::path dir_ = tmp_.path();
  std::string path_;
};

struct Codec {
  const char* fourcc;
  const char* file;
};

class TracerAccuracyTest : public TracerTest, public ::testing::WithParamInterface<Codec> {};

TEST_P(TracerAccuracyTest, FollowsSpotsToWithinHalfAPixel) {
  SyntheticMovie m = three_spots(GetParam().fourcc);
  VideoInfo info = write(m, GetParam().file);
  TraceRequest request{markers_on(m, 0), Trim{0, m.frames - 1}, 1, {}};
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  ASSERT_EQ(frames.size(), static_cast<size_t>(m.frames));

  double error_sum = 0, error_max = 0, velocity_error_sum = 0;
  int rows = 0, velocities = 0;
  for (const TracedFrame& frame : frames) {
    ASSERT_EQ(frame.rows.size(), m.spots.size());
    for (size_t i = 0; i < m.spots.size(); ++i) {
      const TrackRow& row = frame.rows[i];
      EXPECT_EQ(row.status, TrackStatus::kTracked) << "frame " << frame.frame << " spot " << i;
      double e = error_px(m, i, row);
      EXPECT_LT(e, 1.5) << "frame " << frame.frame << " spot " << i << " at " << row.x << ", "
                        << row.y << " score " << row.score;
      error_sum += e;
      error_max = std::max(error_max, e);
      ++rows;
      if (frame.frame == 0 || frame.frame == m.frames - 1) {
        EXPECT_FALSE(row.vx_px_per_s.has_value());
        continue;
      }
      // The central difference of the true path, in px/s.
      SpotPosition before = spot_position(m.spots[i], frame.frame - 1);
      SpotPosition after = spot_position(m.spots[i], frame.frame + 1);
      double vx = (after.x - before.x) * m.fps / 2, vy = (after.y - before.y) * m.fps / 2;
      ASSERT_TRUE(row.vx_px_per_s.has_value() && row.vy_px_per_s.has_value());
      velocity_error_sum += std::hypot(*row.vx_px_per_s - vx, *row.vy_px_per_s - vy);
      ++velocities;
    }
  }
  double error_mean = error_sum / rows;
  double velocity_error_mean = velocity_error_sum / velocities;
  RecordProperty("mean_error_px", std::to_string(error_mean));
  std::printf("%s: mean error %.3f px, max %.3f px, mean velocity error %.2f px/s\n",
              GetParam().fourcc, error_mean, error_max, velocity_error_mean);
  EXPECT_LT(error_mean, 0.5);
  // A position error of e px moves a velocity by about e * fps / 2 * sqrt(2):
  // 0.1 px a frame is 2.5 px/s.
  EXPECT_LT(velocity_error_mean, 0.1 * m.fps);
}

INSTANTIATE_TEST_SUITE_P(Codecs, TracerAccuracyTest,
                         ::testing::Values(Codec{"MJPG", "m.avi"}, Codec{"mp4v", "m.mp4"},
                                           Codec{"XVID", "m.avi"}, Codec{"avc1", "m.mp4"}),
                         [](const auto& info) { return std::string(info.param.fourcc); });

TEST_F(TracerTest, AnOccludedSpotIsLostAndFoundAgain) {
  SyntheticMovie m = three_spots("MJPG");
  m.covers.push_back(Cover{.spot = 0, .first_frame = 15, .last_frame = 18});
  VideoInfo info = write(m, "m.avi");
  TraceRequest request{markers_on(m, 0), Trim{0, m.frames - 1}, 1, {}};
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  ASSERT_EQ(frames.size(), static_cast<size_t>(m.frames));
  for (const TracedFrame& frame : frames) {
    const TrackRow& row = frame.rows[0];
    bool covered = frame.frame >= 15 && frame.frame <= 18;
    EXPECT_EQ(row.status, covered ? TrackStatus::kLost : TrackStatus::kTracked)
        << "frame " << frame.frame << " score " << row.score;
    if (!covered) {
      EXPECT_LT(error_px(m, 0, row), 1.0) << "frame " << frame.frame;
    }
    bool next_to_lost = frame.frame >= 14 && frame.frame <= 19;
    bool at_an_end = frame.frame == 0 || frame.frame == m.frames - 1;
    EXPECT_EQ(row.vx_px_per_s.has_value(), !next_to_lost && !at_an_end) << frame.frame;
    EXPECT_EQ(row.vy_px_per_s.has_value(), !next_to_lost && !at_an_end) << frame.frame;
    // The other spots are not disturbed.
    EXPECT_EQ(frame.rows[1].status, TrackStatus::kTracked);
    EXPECT_EQ(frame.rows[2].status, TrackStatus::kTracked);
  }
  EXPECT_EQ(status_name(TrackStatus::kLost), "lost");
  EXPECT_EQ(status_name(TrackStatus::kTracked), "tracked");
}

TEST_F(TracerTest, EachMarkerKeepsToItsSpotWhenALookAlikeIsInItsWindow) {
  SyntheticMovie m;
  m.frames = 30;
  for (double x0 : {60.2, 80.7}) {  // 20.5 px apart, closer than the search radius
    m.spots.push_back(Spot{.x0_px = x0,
                           .y0_px = 40.4,
                           .vx_px_per_frame = 0.3,
                           .vy_px_per_frame = 1.1,
                           .amplitude_px = 1.5,
                           .period_frames = 13});
  }
  VideoInfo info = write(m, "m.avi");
  TraceRequest request{markers_on(m, 0), Trim{0, m.frames - 1}, 1, {}};
  ASSERT_GT(request.options.search_radius_px, 21);
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  for (const TracedFrame& frame : frames) {
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(frame.rows[i].status, TrackStatus::kTracked);
      EXPECT_LT(error_px(m, i, frame.rows[i]), 1.0) << "frame " << frame.frame << " spot " << i;
    }
  }
}

TEST_F(TracerTest, TrimAndIntervalGiveExactlyTheSampledFrames) {
  SyntheticMovie m = three_spots("MJPG");
  m.frames = 24;
  VideoInfo info = write(m, "m.avi");
  TraceRequest request{markers_on(m, 3), Trim{3, 20}, 4, {}};
  request.options.search_radius_px = 12;  // spots move up to 6 px between sampled frames
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  std::vector<int64_t> numbers;
  for (const TracedFrame& frame : frames) numbers.push_back(frame.frame);
  EXPECT_EQ(numbers, (std::vector<int64_t>{3, 7, 11, 15, 19}));
  EXPECT_EQ(sampled_frame_count(request.trim, request.every_frames), 5);
  for (const TracedFrame& frame : frames) {
    EXPECT_DOUBLE_EQ(frame.time_s, static_cast<double>(frame.frame) / 25);
    for (size_t i = 0; i < frame.rows.size(); ++i) {
      const TrackRow& row = frame.rows[i];
      EXPECT_EQ(row.marker_id, "m" + std::to_string(i));
      EXPECT_EQ(row.label, "spot " + std::to_string(i));
      EXPECT_EQ(row.frame, frame.frame);
      EXPECT_EQ(row.time_s, frame.time_s);
      EXPECT_EQ(row.status, TrackStatus::kTracked);
      EXPECT_LT(error_px(m, i, row), 1.0);
      bool inner = frame.frame != 3 && frame.frame != 19;
      EXPECT_EQ(row.vx_px_per_s.has_value(), inner);
    }
  }
  // The key frame reports the marker as placed.
  EXPECT_EQ(frames[0].rows[1].x, request.markers[1].x);
  EXPECT_EQ(frames[0].rows[1].score, 1.0);
}

// A movie of variable frame rate (2 s at 30 fps, then 4 s at 10 fps, made
// with the ffmpeg command) of a square moving 40 px/s in real time: each
// row's time is its frame's presentation time, and speeds are over the
// true intervals, 40 px/s at both rates (frame / average fps would put the
// slow part's times late and its speeds at a third).
TEST_F(TracerTest, TimesAndSpeedsFollowTheFramesTrueTimes) {
  path_ = (dir_ / "vfr.mp4").string();
  // A white square with a dark centre, overlaid 40 px/s along x (at whole
  // pixels: overlay rounds), on a grey ground.
  const std::string command =
      "ffmpeg -hide_banner -loglevel error -y -f lavfi -i color=c=0x202020:size=320x120:rate=30 "
      "-f lavfi -i color=c=white:size=14x14:rate=30 -t 6 -filter_complex "
      "\"[1]drawbox=x=5:y=5:w=4:h=4:color=black:t=fill[box];"
      "[0][box]overlay=x='20+40*t':y=50:shortest=1,"
      "select='lt(t,2)+gte(t,2)*not(mod(n,3))'\" -fps_mode passthrough -c:v libx264 "
      "-preset ultrafast -qp 0 -g 30 -pix_fmt yuv420p '" +
      path_ + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  Result<VideoInfo> info = probe(path_);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_EQ(info->frame_count, 100);
  ASSERT_TRUE(info->rate_varies);
  // Every third frame: 0.1 s apart at first, 0.3 s after frame 60 (the
  // square's whole-pixel steps then err by at most 1 px over 0.2 s).
  TraceRequest request{{Marker{"box", "box", 0, 26.5, 56.5}}, Trim{0, 99}, 3, {}};
  request.options.search_radius_px = 20;
  std::vector<TracedFrame> frames;
  Status traced = trace_all(*info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  ASSERT_EQ(frames.size(), 34u);
  for (const TracedFrame& frame : frames) {
    const double truth_s = frame.frame < 60 ? frame.frame / 30.0 : 2 + (frame.frame - 60) * 0.1;
    EXPECT_NEAR(frame.time_s, truth_s, 0.001) << "frame " << frame.frame;
    const TrackRow& row = frame.rows[0];
    EXPECT_EQ(row.status, TrackStatus::kTracked) << frame.frame;
    EXPECT_NEAR(row.x, 26.5 + 40 * truth_s, 1.0) << "frame " << frame.frame;
    EXPECT_EQ(row.vx_px_per_s.has_value(), frame.frame != 0 && frame.frame != 99);
    if (row.vx_px_per_s) {
      EXPECT_NEAR(*row.vx_px_per_s, 40, 6) << "frame " << frame.frame;
      EXPECT_NEAR(*row.vy_px_per_s, 0, 1) << "frame " << frame.frame;
    }
  }
}

TEST_F(TracerTest, MarkersAreTracedBackwardAndForwardFromTheirKeyFrames) {
  SyntheticMovie m = three_spots("mp4v");
  m.frames = 30;
  VideoInfo info = write(m, "m.mp4");
  // Key frames: 0 (the trim start), 12 (sampled) and 13 (not sampled).
  std::vector<Marker> markers = {markers_on(m, 0)[0], markers_on(m, 12)[1], markers_on(m, 13)[2]};
  TraceRequest request{markers, Trim{0, 29}, 3, {}};
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  ASSERT_EQ(frames.size(), 10u);
  double error_sum = 0;
  for (size_t j = 0; j < frames.size(); ++j) {
    ASSERT_EQ(frames[j].frame, static_cast<int64_t>(3 * j));
    for (size_t i = 0; i < 3; ++i) {
      const TrackRow& row = frames[j].rows[i];
      EXPECT_EQ(row.status, TrackStatus::kTracked) << "frame " << row.frame << " marker " << i;
      error_sum += error_px(m, i, row);
      EXPECT_LT(error_px(m, i, row), 1.0) << "frame " << row.frame << " marker " << i;
    }
  }
  EXPECT_LT(error_sum / 30, 0.5);
  EXPECT_EQ(frames[4].rows[1].score, 1.0);  // frame 12, its key frame
  EXPECT_TRUE(frames[4].rows[1].vx_px_per_s.has_value());
}

TEST_F(TracerTest, AnIntervalLongerThanTheTrimSamplesItsStart) {
  SyntheticMovie m = three_spots("MJPG");
  m.frames = 8;
  VideoInfo info = write(m, "m.avi");
  TraceRequest request{markers_on(m, 5), Trim{2, 7}, INT64_MAX, {}};
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  ASSERT_TRUE(traced.ok()) << traced.to_string();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].frame, 2);
  EXPECT_EQ(frames[0].rows[0].status, TrackStatus::kTracked);
  EXPECT_LT(error_px(m, 0, frames[0].rows[0]), 1.0);
  EXPECT_FALSE(frames[0].rows[0].vx_px_per_s.has_value());
}

TEST_F(TracerTest, ACallbackErrorStopsTracingAtOnce) {
  SyntheticMovie m = three_spots("MJPG");
  m.frames = 12;
  VideoInfo info = write(m, "m.avi");
  TraceRequest request{markers_on(m, 0), Trim{0, 11}, 1, {}};
  int calls = 0;
  Status traced = trace(path_, info, request, [&](const TracedFrame&) {
    return ++calls == 3 ? failed_precondition("lease lost") : Status();
  });
  EXPECT_EQ(traced, failed_precondition("lease lost"));
  EXPECT_EQ(calls, 3);
}

TEST_F(TracerTest, AStopRequestStopsTracing) {
  SyntheticMovie m = three_spots("MJPG");
  m.frames = 12;
  VideoInfo info = write(m, "m.avi");
  TraceRequest request{markers_on(m, 0), Trim{0, 11}, 1, {}};
  std::stop_source stop;
  int calls = 0;
  Status traced = trace(
      path_, info, request,
      [&](const TracedFrame&) {
        if (++calls == 2) stop.request_stop();
        return Status();
      },
      stop.get_token());
  EXPECT_EQ(traced.code(), Code::kFailedPrecondition) << traced.to_string();
  EXPECT_EQ(calls, 2);
}

TEST_F(TracerTest, BadRequestsAreRefusedBeforeAnythingIsOpened) {
  VideoInfo info;
  info.width = 160;
  info.height = 120;
  info.fps = 25;
  info.frame_count = 40;
  const TraceRequest good{{Marker{"a", "", 5, 80, 60}}, Trim{0, 39}, 1, {}};
  ASSERT_TRUE(validate(good, info).ok());

  std::vector<std::pair<std::string, TraceRequest>> bad;
  auto add = [&](std::string what, auto change) {
    TraceRequest r = good;
    change(r);
    bad.emplace_back(std::move(what), std::move(r));
  };
  add("marker left of the frame", [](TraceRequest& r) { r.markers[0].x = -0.5; });
  add("marker below the frame", [](TraceRequest& r) { r.markers[0].y = 119.5; });
  add("marker not a number", [](TraceRequest& r) { r.markers[0].x = std::nan(""); });
  add("marker before the trim", [](TraceRequest& r) { r.trim.start_frame = 6; });
  add("trim past the end", [](TraceRequest& r) { r.trim.end_frame = 40; });
  add("trim backwards", [](TraceRequest& r) { r.trim = {10, 9}; });
  add("trim before 0", [](TraceRequest& r) { r.trim.start_frame = -1; });
  add("interval 0", [](TraceRequest& r) { r.every_frames = 0; });
  add("interval negative", [](TraceRequest& r) { r.every_frames = -3; });
  add("no markers", [](TraceRequest& r) { r.markers.clear(); });
  add("too many markers", [](TraceRequest& r) {
    for (size_t i = 0; i < kMarkersMax; ++i)
      r.markers.push_back({"x" + std::to_string(i), "", 5, 1, 1});
  });
  add("duplicate ID", [](TraceRequest& r) { r.markers.push_back(r.markers[0]); });
  add("empty ID", [](TraceRequest& r) { r.markers[0].id.clear(); });
  add("long label", [](TraceRequest& r) { r.markers[0].label.assign(300, 'x'); });
  add("even template", [](TraceRequest& r) { r.options.template_px = 20; });
  add("tiny template", [](TraceRequest& r) { r.options.template_px = 3; });
  add("radius 0", [](TraceRequest& r) { r.options.search_radius_px = 0; });
  add("threshold above 1", [](TraceRequest& r) { r.options.score_min = 1.5; });
  for (const auto& [what, request] : bad) {
    Status status = validate(request, info);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << what << ": " << status.to_string();
    // trace() validates before it opens the file, which does not exist.
    Status traced = trace((dir_ / "missing.mp4").string(), info, request,
                          [](const TracedFrame&) { return internal_error("called"); });
    EXPECT_EQ(traced.code(), Code::kInvalidArgument) << what << ": " << traced.to_string();
  }
  EXPECT_EQ(trace((dir_ / "missing.mp4").string(), info, good,
                  [](const TracedFrame&) { return Status(); })
                .code(),
            Code::kNotFound);
}

TEST_F(TracerTest, KeyFramesTooFarIntoALargeVideoAreRefused) {
  VideoInfo info;
  info.width = 4096;
  info.height = 4096;  // 16 MiB a frame in grey
  info.fps = 25;
  info.frame_count = 1000;
  TraceRequest request{{Marker{"a", "", 15, 10, 10}}, Trim{0, 999}, 1, {}};
  EXPECT_TRUE(validate(request, info).ok());  // 16 frames kept: 256 MiB
  request.markers[0].frame = 16;
  Status status = validate(request, info);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("too far"), std::string::npos) << status.message();
  request.every_frames = 2;  // 9 frames kept
  EXPECT_TRUE(validate(request, info).ok());
}

TEST_F(TracerTest, AVideoShorterThanProbedIsAnError) {
  SyntheticMovie m = three_spots("MJPG");
  m.frames = 10;
  VideoInfo info = write(m, "m.avi");
  info.frame_count = 20;
  TraceRequest request{markers_on(m, 0), Trim{0, 15}, 1, {}};
  std::vector<TracedFrame> frames;
  Status traced = trace_all(info, request, frames);
  EXPECT_EQ(traced.code(), Code::kInvalidArgument) << traced.to_string();
  EXPECT_NE(traced.message().find("ends after frame 9"), std::string::npos) << traced.message();
  EXPECT_EQ(frames.size(), 9u);  // frame 9 waits for frame 10, which never comes
}

TEST_F(TracerTest, AnotherVideoThanProbedIsAnError) {
  SyntheticMovie m = three_spots("MJPG");
  m.frames = 5;
  VideoInfo info = write(m, "m.avi");
  info.width = 320;
  TraceRequest request{markers_on(m, 0), Trim{0, 4}, 1, {}};
  Status traced = trace(path_, info, request, [](const TracedFrame&) { return Status(); });
  EXPECT_EQ(traced.code(), Code::kInvalidArgument) << traced.to_string();
}

}  // namespace
}  // namespace leasehold::tracer
