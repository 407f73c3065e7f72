// Exact frames of movies as JPEG images, for the page that steps through a
// movie frame by frame and draws markers over it. Frame n is the n-th frame
// decoded from the start of the file (tracer::FrameReader's numbering, the
// tracer's and the markers'), never a seek's guess, whatever the container.
//
// FrameCache decodes and keeps. Its readers stay open where they stopped (at
// most readers_max in all, the least recently used idle one closed first),
// so that frame n + 1 after frame n decodes one frame. Given the movie's
// frame times (movies/frame_times.h), a frame behind every reader of its
// movie, or far ahead of them, is decoded from the key frame at or before
// it (FrameReader::seek()): at most a key frame's interval of frames, not
// the whole movie up to it; without them, from the first frame. Each image
// is encoded once and kept under the media's work folder, in
// <work folder>/.frames/<movie id>/<n>.jpg (written to a temporary file, then
// renamed: a reader never sees half an image), until the images' total size
// passes cache_bytes_max, when the least recently used go. Images kept by an
// earlier process count toward the bound from the start. The folder of a
// movie goes with the movie (Movies::finish_remove, frame_cache_dir()).
//
// FrameImages puts the movie's rules in front: only a probed movie's frames
// (0..frame_count - 1) are shown.
//
// The work of one request is bounded: it decodes at most up to its frame,
// and at most readers_max decodes run at once (a request that needs a
// reader while all are busy waits for one). Two requests for one image
// decode it once: the second waits for the first.
//
// Thread-safe: both classes may be called from many threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "leasehold/status.h"
#include "movies/media.h"
#include "movies/movies.h"
#include "tracer/jpeg.h"
#include "tracer/video.h"

namespace leasehold::movies {

// The folder of the media folder that holds the images, one folder per movie.
inline constexpr char kFrameCacheFolder[] = ".frames";
inline constexpr size_t kFrameReadersMaxDefault = 4;
inline constexpr int kFramesKeptDefault = 16;
inline constexpr uint64_t kFrameCacheBytesMaxDefault = uint64_t{256} << 20;  // 256 MiB

// The folder of a movie's images: <work_dir>/.frames/<movie_id>, in the
// media's work folder (media.h).
std::string frame_cache_dir(const std::string& work_dir, const std::string& movie_id);

struct FrameCacheOptions {
  // The movies' files, and the work folder whose .frames holds the images
  // (required; not owned).
  MediaStore* media = nullptr;
  size_t readers_max = kFrameReadersMaxDefault;           // >= 1
  uint64_t cache_bytes_max = kFrameCacheBytesMaxDefault;  // the newest image is kept even if larger
  int jpeg_quality = tracer::kJpegQualityDefault;         // 1..100
  tracer::VideoLimits video_limits = {};
  // The frames each reader keeps (tracer::VideoLimits::frames_kept), so
  // that stepping back through a movie decodes nothing within them: about
  // 3 MB each at 1080p.
  int frames_kept = kFramesKeptDefault;
};

// What a FrameCache has done since it was made.
struct FrameCacheStats {
  int64_t frames_decoded = 0;  // FrameReader::next() calls
  int64_t readers_opened = 0;
  int64_t images_written = 0;
  int64_t cache_hits = 0;
  size_t readers_open_max = 0;  // the most readers open at once
  size_t images = 0;            // kept now
  uint64_t image_bytes = 0;     // their total size
};

class FrameCache {
 public:
  // Reads the images kept under <work folder>/.frames (and removes temporary
  // files a stopped process left there). kInvalidArgument for options out
  // of range or no media.
  static Result<std::unique_ptr<FrameCache>> open(FrameCacheOptions options);
  ~FrameCache();
  FrameCache(const FrameCache&) = delete;
  FrameCache& operator=(const FrameCache&) = delete;

  // The path of the JPEG of frame `frame` of `file` (a file name in the
  // media folder), the file of movie `movie_id`, decoded and kept if it was
  // not kept yet; `*written` (if not null) says whether this call wrote it.
  // kNotFound if the video ends before that frame; kInvalidArgument for an
  // ID or a file name that is not a plain name, or a negative frame;
  // FrameReader::open()'s errors; kUnavailable if the image cannot be
  // written. The file may be evicted by later calls.
  // REQUIRES: the file of a movie never changes under its ID.
  // `times`, if not null, are the file's (FrameImages reads them).
  Result<std::string> jpeg(const std::string& movie_id, const std::string& file, int64_t frame,
                           const tracer::FrameTimes* times = nullptr, bool* written = nullptr);

  // Closes the idle readers of `movie_id` and removes its images and its
  // folder. Idempotent.
  Status forget(const std::string& movie_id);

  FrameCacheStats stats() const;

 private:
  struct Reader {
    std::string movie_id;
    std::string file;  // the one it reads: the movie's, or its proxy
    std::unique_ptr<tracer::FrameReader> reader;
    uint64_t used = 0;  // tick_ when last returned
  };
  struct Image {
    uint64_t bytes = 0;
    uint64_t used = 0;  // its key in by_use_
  };

  explicit FrameCache(FrameCacheOptions options);
  tracer::VideoLimits reader_limits() const {
    tracer::VideoLimits limits = options_.video_limits;
    limits.frames_kept = options_.frames_kept;
    return limits;
  }
  std::string image_path(const std::string& movie_id, int64_t frame) const;
  // Decodes `frame` with `reader` (one of the movie's, or null: a new one
  // on the media's `file`, counted in `counted`) and writes its image to
  // `path`: its size.
  Result<uint64_t> decode_and_write(std::unique_ptr<tracer::FrameReader>& reader,
                                    const std::string& file, int64_t frame,
                                    const tracer::FrameTimes* times, const std::string& path,
                                    FrameCacheStats& counted);
  // Takes the idle reader of `movie_id` that is furthest along but before
  // `frame` (with `times`: at or after the key frame before it, else any
  // reader of the movie, which seeks), or makes room for a new one (then
  // null; an idle reader it closes goes to `closing`), waiting while every
  // reader is busy.
  std::unique_ptr<tracer::FrameReader> take_reader(
      const std::string& movie_id, const std::string& file, int64_t frame,
      const tracer::FrameTimes* times,
      std::vector<std::unique_ptr<tracer::FrameReader>>& closing) REQUIRES(mu_);
  void remember(const std::string& path, uint64_t bytes) REQUIRES(mu_);
  // The paths of the least recently used images past the bound, forgotten.
  std::vector<std::string> evict() REQUIRES(mu_);
  void scan();

  const FrameCacheOptions options_;
  mutable Mutex mu_;
  CondVar changed_;  // a reader returned or an image finished
  uint64_t tick_ GUARDED_BY(mu_) = 0;
  std::vector<Reader> idle_ GUARDED_BY(mu_);
  size_t busy_ GUARDED_BY(mu_) = 0;                      // readers in use, outside idle_
  std::set<std::string> in_flight_ GUARDED_BY(mu_);      // image paths being made
  std::map<std::string, Image> images_ GUARDED_BY(mu_);  // by path
  std::map<uint64_t, std::string> by_use_ GUARDED_BY(mu_);
  uint64_t image_bytes_ GUARDED_BY(mu_) = 0;
  FrameCacheStats stats_ GUARDED_BY(mu_);
};

// A movie's frame as an image file to send.
struct FrameJpeg {
  std::string path;
  std::string etag;  // quoted; the same for a frame of a movie whenever asked
};

class FrameImages {
 public:
  // REQUIRES: `movies` and `cache` outlive this.
  FrameImages(Movies& movies, FrameCache& cache, int jpeg_quality = tracer::kJpegQualityDefault)
      : movies_(movies), cache_(cache), jpeg_quality_(jpeg_quality) {}

  // The ETag of frame `frame` of movie `id`, if the movie may show it:
  // kNotFound for no such movie or a frame outside 0..frame_count - 1;
  // kFailedPrecondition while the movie is not probed (processing, invalid,
  // deleting); the store's errors. Decodes nothing.
  Result<std::string> check(const std::string& id, int64_t frame);
  // The frame's image, decoded if needed (FrameCache::jpeg), after check():
  // kUnavailable if it cannot be written, kInternal if the frame the probe
  // decoded does not decode now.
  // An image written for a movie that was being removed meanwhile is
  // removed again (kNotFound or kFailedPrecondition): none outlives its
  // movie.
  Result<FrameJpeg> jpeg(const std::string& id, int64_t frame);

 private:
  Result<MovieDetail> showable(const std::string& id, int64_t frame);
  std::string etag(const std::string& id, int64_t frame) const;
  // Where the movie's frames are decoded from: its proxy if it has one
  // (Movies::make_proxy), else its own file; and that file's frame times,
  // read once and kept for the last few movies shown (null if they cannot
  // be read: frames are then decoded from the first).
  struct Source {
    std::string file;
    std::shared_ptr<const tracer::FrameTimes> times;
  };
  Source source_of(const MovieDetail& m);

  Movies& movies_;
  FrameCache& cache_;
  const int jpeg_quality_;
  static constexpr size_t kSourcesKept = 16;
  Mutex sources_mu_;
  // By movie ID, the newest last.
  std::vector<std::pair<std::string, Source>> sources_ GUARDED_BY(sources_mu_);
};

}  // namespace leasehold::movies
