// MediaStore: where the movie service keeps movie files: a folder (the media
// folder, as `--media-dir DIR` has always meant) or an S3 location
// (`--media-dir s3://BUCKET/PREFIX[?endpoint=URL]`), so that trace workers on
// other machines need no shared file system.
//
// The service names each file (a random token and the container's
// extension) and never changes it. Reading a movie (its probe, a trace, the
// frame images) needs a file on the local disk: local() gives one, the
// folder's own file, or for S3 a copy downloaded into the work folder, kept
// while a LocalFile holding it lives and removed when the last is released
// (so the copies on disk are bounded by the readers at work, and none stays
// after use). A download is the folder's file, streamed by the server, or for
// S3 a presigned URL valid for kDownloadUrlTtl, which the server answers
// with a redirect.
//
// The work folder holds what is local to a process whatever the media are:
// uploads being received (kUploadsFolder, app/serving.h) and the frame
// images (frame_images.h). It is the media folder itself for a folder; for
// S3, a temporary folder of the process's own, removed with the store.
//
// Errors: a file that is not there is kNotFound, with a message a user may
// read (it names no folder, bucket or key). A failure of the storage itself,
// S3's refusals among them (credentials refused or expired, access denied, a
// missing bucket, a region mismatch), is kUnavailable, "storage
// unavailable: ...", whose message (S3's error code and AWS's request ID,
// the bucket and the key) is for the log: the deployment is at fault, not
// the caller, and the server answers it 503 without the message.
//
// Thread-safe: many threads may use one MediaStore.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"

namespace leasehold::movies {

inline constexpr Duration kDownloadUrlTtl = std::chrono::minutes(5);
// The folder of the work folder that holds the copies of S3 objects.
inline constexpr char kCopiesFolder[] = ".copies";

// A movie's file on the local disk, readable while this object lives.
class LocalFile {
 public:
  virtual ~LocalFile() = default;
  virtual const std::string& path() const = 0;
};

// Where a download is served from: a local file, or a URL to redirect to.
struct Download {
  std::string path;
  std::string url;
};

class MediaStore {
 public:
  virtual ~MediaStore() = default;

  // The local folder for uploads and frame images (see above).
  virtual const std::string& work_dir() const = 0;
  // "media folder '/srv/movies'", "S3 s3://bucket/prefix/": for the log and
  // the operator, never for a user.
  virtual std::string describe() const = 0;

  // Keeps the finished upload at `local_path` (in the work folder) as
  // `file`, served as `content_type`. The local file is gone afterwards,
  // kept or not. kUnavailable when the storage refuses it.
  virtual Status keep(const std::string& local_path, const std::string& file,
                      const std::string& content_type) = 0;
  // OK if `file` is kept; kNotFound if not; kUnavailable if that cannot be
  // told.
  virtual Status check_exists(const std::string& file) = 0;
  // A local file holding `file`: kNotFound if there is none; kUnavailable
  // if that cannot be told.
  virtual Result<std::shared_ptr<const LocalFile>> local(const std::string& file) = 0;
  // Removes `file`; OK if there was none.
  virtual Status remove(const std::string& file) = 0;
  virtual Result<Download> download(const std::string& file) = 0;
};

struct MediaOptions {
  // For S3: the parent of the work folder (empty: $TMPDIR, else /tmp).
  std::string temp_parent = {};
  Clock* clock = nullptr;  // null: the system clock; else outlives the store
  // For S3: the multipart threshold and the part size (at least S3's
  // minimum, 5 MiB).
  uint64_t s3_part_bytes = uint64_t{8} << 20;
  // For S3: each request's bound (aws::S3ClientOptions::request_timeout).
  Duration s3_request_timeout = std::chrono::seconds(30);
  // For S3: told that the bucket is in another region than the URI's (not
  // owned; outlives the store). Null logs nothing.
  Logger* log = nullptr;
};

// True for "s3://..." (which may still be malformed).
bool is_s3_media(const std::string& where);

// A folder (which must exist) or an S3 location: kInvalidArgument for a
// folder that is not one or a malformed s3:// URI, kFailedPrecondition for
// one that names no region where none is configured (aws::parse_s3_uri);
// the credentials chain's errors. For S3 it sends nothing: the first call finds out whether the
// bucket answers.
Result<std::unique_ptr<MediaStore>> open_media(const std::string& where,
                                               const MediaOptions& options = {});

// The same checks, without opening anything: for flags checked before a
// process starts.
Status validate_media(const std::string& where);

}  // namespace leasehold::movies
