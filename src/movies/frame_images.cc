#include "movies/frame_images.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "movies/schema.h"

namespace leasehold::movies {
namespace {

// A probed movie whose file no longer opens or decodes is the server's
// fault, not the caller's, and the decoder's message names the file on this
// machine: a 500, whose message only the log sees.
Status unreadable(const Status& decoder) {
  return internal_error("the movie's file cannot be read: " + decoder.message());
}

namespace fs = std::filesystem;

constexpr char kImageSuffix[] = ".jpg";
constexpr char kTemporarySuffix[] = ".tmp";

// Writes `bytes` to `path` through a temporary file beside it, renamed over
// it: a reader finds the whole image or none.
Status write_atomically(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return unavailable("the frame cache folder cannot be made: " + ec.message());
  // One writer per image in a process (FrameCache's in_flight_); the pid
  // keeps the writers of processes sharing the media folder apart.
  const fs::path temporary = path.parent_path() / ("." + path.filename().string() + "." +
                                                   std::to_string(getpid()) + kTemporarySuffix);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(temporary, ec);
      return unavailable("a frame image cannot be written to the cache");
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return unavailable("a frame image cannot be kept in the cache: " + ec.message());
  }
  return {};
}

// A movie ID that is a plain name, safe as a folder's.
bool is_plain_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name.front() != '.' &&
         name.find_first_of("/\\") == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

std::string frame_cache_dir(const std::string& work_dir, const std::string& movie_id) {
  return (fs::path(work_dir) / kFrameCacheFolder / movie_id).string();
}

// ---------------------------------------------------------------- FrameCache

Result<std::unique_ptr<FrameCache>> FrameCache::open(FrameCacheOptions options) {
  if (options.readers_max < 1) return invalid_argument("frame readers: at least 1");
  if (options.jpeg_quality < 1 || options.jpeg_quality > 100) {
    return invalid_argument("JPEG quality: 1..100");
  }
  if (options.media == nullptr) return invalid_argument("frame images need the media");
  std::unique_ptr<FrameCache> cache(new FrameCache(std::move(options)));
  cache->scan();
  return cache;
}

FrameCache::FrameCache(FrameCacheOptions options) : options_(std::move(options)) {}
FrameCache::~FrameCache() = default;

std::string FrameCache::image_path(const std::string& movie_id, int64_t frame) const {
  return (fs::path(frame_cache_dir(options_.media->work_dir(), movie_id)) /
          (std::to_string(frame) + kImageSuffix))
      .string();
}

// The images an earlier process kept count from the start, oldest first;
// its temporary files are left overs.
void FrameCache::scan() {
  const fs::path root = fs::path(options_.media->work_dir()) / kFrameCacheFolder;
  std::vector<std::pair<fs::file_time_type, std::pair<std::string, uint64_t>>> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    const uint64_t bytes = it->file_size(ec);
    if (name.ends_with(kTemporarySuffix) || (name.ends_with(kImageSuffix) && bytes == 0)) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    } else if (name.ends_with(kImageSuffix)) {
      found.push_back({it->last_write_time(ec), {it->path().string(), bytes}});
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> evicted;
  {
    MutexLock lock(mu_);
    for (const auto& [when, image] : found) remember(image.first, image.second);
    evicted = evict();
  }
  for (const std::string& path : evicted) fs::remove(path, ec);
}

Result<std::string> FrameCache::jpeg(const std::string& movie_id, const std::string& file,
                                     int64_t frame, const tracer::FrameTimes* times,
                                     bool* written) {
  if (written != nullptr) *written = false;
  if (!is_plain_name(movie_id) || !is_plain_name(file) || frame < 0) {
    return invalid_argument("no such frame image");
  }
  const std::string path = image_path(movie_id, frame);
  std::unique_ptr<tracer::FrameReader> reader;
  std::vector<std::unique_ptr<tracer::FrameReader>> closing;  // closed after the lock
  {
    MutexLock lock(mu_);
    for (;;) {
      if (auto it = images_.find(path); it != images_.end()) {
        // Kept, unless the movie's folder was removed since (by another
        // process's removal of the movie).
        std::error_code ec;
        if (fs::exists(path, ec)) {
          by_use_.erase(it->second.used);
          it->second.used = ++tick_;
          by_use_[it->second.used] = path;
          ++stats_.cache_hits;
          return path;
        }
        image_bytes_ -= it->second.bytes;
        by_use_.erase(it->second.used);
        images_.erase(it);
      }
      if (!in_flight_.contains(path)) break;
      changed_.wait(mu_);  // another request is making this image
    }
    in_flight_.insert(path);
    reader = take_reader(movie_id, file, frame, times, closing);
  }
  closing.clear();
  FrameCacheStats counted;
  const Result<uint64_t> made = decode_and_write(reader, file, frame, times, path, counted);
  std::vector<std::string> evicted;
  {
    MutexLock lock(mu_);
    in_flight_.erase(path);
    --busy_;
    if (reader) idle_.push_back(Reader{movie_id, file, std::move(reader), ++tick_});
    stats_.frames_decoded += counted.frames_decoded;
    stats_.readers_opened += counted.readers_opened;
    if (made.ok()) {
      ++stats_.images_written;
      remember(path, *made);
      evicted = evict();
    }
    changed_.notify_all();
  }
  std::error_code ec;
  for (const std::string& old : evicted) fs::remove(old, ec);
  LEASEHOLD_RETURN_IF_ERROR(made.status());
  if (written != nullptr) *written = true;
  return path;
}

std::unique_ptr<tracer::FrameReader> FrameCache::take_reader(
    const std::string& movie_id, const std::string& file, int64_t frame,
    const tracer::FrameTimes* times,
    std::vector<std::unique_ptr<tracer::FrameReader>>& closing) {
  // With times, a reader before the key frame at or before `frame` (or
  // past `frame`) seeks there: as good as any other of the movie's.
  const bool seeks = times != nullptr && times->seekable() &&
                     frame < static_cast<int64_t>(times->pts.size());
  const int64_t key =
      seeks ? *(std::upper_bound(times->keys.begin(), times->keys.end(), frame) - 1) : 0;
  for (;;) {
    // The reader of this movie furthest along, but before the frame; else,
    // when readers seek, the one of this movie used last.
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      if (it->movie_id == movie_id && it->file == file && it->reader->frame() < frame &&
          (best == idle_.end() || it->reader->frame() > best->reader->frame())) {
        best = it;
      }
    }
    if (seeks && (best == idle_.end() || best->reader->frame() < key)) {
      for (auto it = idle_.begin(); it != idle_.end(); ++it) {
        if (it->movie_id == movie_id && it->file == file &&
            (best == idle_.end() || it->used > best->used)) {
          best = it;
        }
      }
    }
    if (best != idle_.end()) {
      std::unique_ptr<tracer::FrameReader> taken = std::move(best->reader);
      idle_.erase(best);
      ++busy_;
      return taken;
    }
    if (idle_.size() + busy_ >= options_.readers_max && !idle_.empty()) {
      const auto oldest =
          std::min_element(idle_.begin(), idle_.end(),
                           [](const Reader& a, const Reader& b) { return a.used < b.used; });
      closing.push_back(std::move(oldest->reader));
      idle_.erase(oldest);
    }
    if (idle_.size() + busy_ < options_.readers_max) {
      ++busy_;
      stats_.readers_open_max = std::max(stats_.readers_open_max, idle_.size() + busy_);
      return nullptr;  // the caller opens one
    }
    changed_.wait(mu_);  // every reader is busy
  }
}

// Steps `reader` (or a new one, from the first frame) to `frame`, converting
// only that frame's pixels, or with `times` seeks it there, and keeps its
// JPEG at `path`. A reader that failed or reached the end is of no further
// use: it is dropped.
Result<uint64_t> FrameCache::decode_and_write(std::unique_ptr<tracer::FrameReader>& reader,
                                              const std::string& file, int64_t frame,
                                              const tracer::FrameTimes* times,
                                              const std::string& path, FrameCacheStats& counted) {
  if (!reader) {
    // The reader keeps the file it opened: a copy from S3 may be removed
    // once it is open.
    LEASEHOLD_ASSIGN_OR_RETURN(const std::shared_ptr<const LocalFile> video,
                               options_.media->local(file));
    Result<std::unique_ptr<tracer::FrameReader>> opened =
        tracer::FrameReader::open(video->path(), reader_limits());
    if (!opened.ok()) return unreadable(opened.status());
    reader = std::move(opened).value();
    ++counted.readers_opened;
  }
  if (times != nullptr && times->seekable()) {
    const int64_t decoded_before = reader->frames_decoded();
    const Result<bool> found = reader->seek(frame, *times, /*want_pixels=*/true);
    counted.frames_decoded += reader->frames_decoded() - decoded_before;
    if (!found.ok() || !*found) {
      reader.reset();
      if (!found.ok()) return unreadable(found.status());
      return not_found("the video ends before frame " + std::to_string(frame));
    }
  }
  assert(reader->frame() <= frame);
  while (reader->frame() < frame) {
    const Result<bool> more = reader->next(/*want_pixels=*/reader->frame() + 1 == frame);
    ++counted.frames_decoded;
    if (!more.ok() || !*more) {
      reader.reset();
      if (!more.ok()) return unreadable(more.status());
      return not_found("the video ends before frame " + std::to_string(frame));
    }
  }
  Result<std::string> bytes = tracer::encode_jpeg(reader->image(), options_.jpeg_quality);
  if (!bytes.ok()) return bytes.status();
  LEASEHOLD_RETURN_IF_ERROR(write_atomically(path, *bytes));
  return static_cast<uint64_t>(bytes->size());
}

void FrameCache::remember(const std::string& path, uint64_t bytes) {
  auto [it, added] = images_.try_emplace(path);
  if (!added) {
    image_bytes_ -= it->second.bytes;
    by_use_.erase(it->second.used);
  }
  it->second = Image{bytes, ++tick_};
  by_use_[it->second.used] = path;
  image_bytes_ += bytes;
  stats_.images = images_.size();
  stats_.image_bytes = image_bytes_;
}

// The newest image stays even alone past the bound: it is about to be sent.
std::vector<std::string> FrameCache::evict() {
  std::vector<std::string> out;
  while (image_bytes_ > options_.cache_bytes_max && images_.size() > 1) {
    const auto oldest = by_use_.begin();
    const auto it = images_.find(oldest->second);
    assert(it != images_.end());
    image_bytes_ -= it->second.bytes;
    out.push_back(oldest->second);
    images_.erase(it);
    by_use_.erase(oldest);
  }
  stats_.images = images_.size();
  stats_.image_bytes = image_bytes_;
  return out;
}

Status FrameCache::forget(const std::string& movie_id) {
  if (!is_plain_name(movie_id)) return invalid_argument("not a movie ID");
  const std::string dir = frame_cache_dir(options_.media->work_dir(), movie_id);
  const std::string prefix = (fs::path(dir) / "").string();
  std::vector<std::unique_ptr<tracer::FrameReader>> closing;
  {
    MutexLock lock(mu_);
    for (auto it = idle_.begin(); it != idle_.end();) {
      if (it->movie_id != movie_id) {
        ++it;
        continue;
      }
      closing.push_back(std::move(it->reader));
      it = idle_.erase(it);
    }
    for (auto it = images_.lower_bound(prefix);
         it != images_.end() && it->first.starts_with(prefix);) {
      image_bytes_ -= it->second.bytes;
      by_use_.erase(it->second.used);
      it = images_.erase(it);
    }
    stats_.images = images_.size();
    stats_.image_bytes = image_bytes_;
    changed_.notify_all();
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return unavailable("the movie's frame images cannot be removed: " + ec.message());
  return {};
}

FrameCacheStats FrameCache::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

// ---------------------------------------------------------------- FrameImages

Result<MovieDetail> FrameImages::showable(const std::string& id, int64_t frame) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, movies_.get(id));
  if (m.status == kStatusProcessing || m.status == kStatusInvalid || m.status == kStatusDeleting ||
      m.frame_count < 1) {
    return failed_precondition("the movie is " + m.status +
                               ": its frames are shown once it is probed");
  }
  if (frame < 0 || frame >= m.frame_count) {
    return not_found("no frame " + std::to_string(frame) + ": the movie has frames 0 to " +
                     std::to_string(m.frame_count - 1));
  }
  return m;
}

// The image of a frame never changes: the movie's file never does, nor the
// decoder's numbering. The quality is in it, should it ever change.
std::string FrameImages::etag(const std::string& id, int64_t frame) const {
  return "\"" + id + "-" + std::to_string(frame) + "-q" + std::to_string(jpeg_quality_) + "\"";
}

FrameImages::Source FrameImages::source_of(const MovieDetail& m) {
  const std::string& file = m.proxy_file.empty() ? m.file : m.proxy_file;
  {
    MutexLock lock(sources_mu_);
    for (auto it = sources_.begin(); it != sources_.end(); ++it) {
      if (it->first != m.id || it->second.file != file) continue;
      auto kept = std::move(*it);
      sources_.erase(it);
      sources_.push_back(std::move(kept));
      return sources_.back().second;
    }
  }
  Source source{file, nullptr};
  if (!m.proxy_file.empty()) {
    source.times = std::make_shared<const tracer::FrameTimes>(
        tracer::proxy_times(m.proxy, m.proxy_key_every));
  } else if (Result<tracer::FrameTimes> read = movies_.frame_times(m.id); read.ok()) {
    source.times = std::make_shared<const tracer::FrameTimes>(std::move(read).value());
  }
  MutexLock lock(sources_mu_);
  std::erase_if(sources_, [&m](const auto& kept) { return kept.first == m.id; });
  if (sources_.size() >= kSourcesKept) sources_.erase(sources_.begin());
  sources_.emplace_back(m.id, source);
  return source;
}

Result<std::string> FrameImages::check(const std::string& id, int64_t frame) {
  LEASEHOLD_RETURN_IF_ERROR(showable(id, frame).status());
  return etag(id, frame);
}

Result<FrameJpeg> FrameImages::jpeg(const std::string& id, int64_t frame) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, showable(id, frame));
  bool written = false;
  const Source source = source_of(m);
  Result<std::string> path = cache_.jpeg(id, source.file, frame, source.times.get(), &written);
  if (!path.ok() && path.status().code() != Code::kUnavailable) {
    // The probe decoded this frame: failing now is the server's fault, and
    // the reader's message names paths, which are for the log only.
    return internal_error("frame " + std::to_string(frame) + " of movie " + id + ": " +
                          path.status().message());
  }
  if (!path.ok()) return path.status();
  if (written) {
    // A removal may have begun while the image was made, and its removal
    // job removed the folder before the image was written: the movie read
    // again says so, and the image goes now.
    const Result<MovieDetail> again = movies_.get(id);
    if (!again.ok() || again->status == kStatusDeleting) {
      LEASEHOLD_RETURN_IF_ERROR(cache_.forget(id));
      if (!again.ok()) return again.status();
      return failed_precondition("the movie is being removed");
    }
  }
  return FrameJpeg{std::move(path).value(), etag(id, frame)};
}

}  // namespace leasehold::movies
