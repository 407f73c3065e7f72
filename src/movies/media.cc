// The two MediaStores: a folder, and S3 with a work folder of its own.
#include "movies/media.h"

#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "aws/s3.h"
#include "base/mutex.h"

namespace leasehold::movies {
namespace {

namespace fs = std::filesystem;

// What a caller is told of a movie's file that is not there: a 404 or 400
// may carry it to the user, who has no use for a folder, a bucket or a key.
constexpr std::string_view kFileMissing = "the movie's file is missing";

// What may be told of S3's failures, and what only the log may. The one
// answer about the object asked for, that it is missing, is the caller's
// (missing() below). Every other failure is the deployment's: credentials
// refused, access denied, a missing bucket, a region or any 4xx the requests
// were not expected to get, S3 or the network down, an object replaced while
// it was read (the service never replaces one). Those are kUnavailable,
// "storage unavailable", with S3's message, which names the bucket, the key,
// S3's error code and AWS's request ID for the log (server/errors.h keeps a
// 5xx's message out of the answer). A bug or a malformed reply stays
// kInternal.
Status storage_failure(const Status& s, std::string_view what) {
  if (s.ok() || s.code() == Code::kInternal) return s;
  return unavailable("storage unavailable: " + std::string(what) + ": " + s.message());
}

// A file of the media folder itself: nothing to release.
class FolderFile final : public LocalFile {
 public:
  explicit FolderFile(std::string path) : path_(std::move(path)) {}
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
};

class FolderMedia final : public MediaStore {
 public:
  explicit FolderMedia(std::string dir) : dir_(std::move(dir)) {}

  const std::string& work_dir() const override { return dir_; }
  std::string describe() const override { return "media folder '" + dir_ + "'"; }

  Status keep(const std::string& local_path, const std::string& file, const std::string&) override {
    std::error_code ec;
    fs::rename(local_path, path_of(file), ec);
    if (ec) {
      fs::remove(local_path, ec);
      return internal_error("upload not kept: " + ec.message());
    }
    return {};
  }
  Status check_exists(const std::string& file) override {
    std::error_code ec;
    if (!fs::is_regular_file(path_of(file), ec)) return not_found(std::string(kFileMissing));
    return {};
  }
  Result<std::shared_ptr<const LocalFile>> local(const std::string& file) override {
    LEASEHOLD_RETURN_IF_ERROR(check_exists(file));
    return std::shared_ptr<const LocalFile>(std::make_shared<FolderFile>(path_of(file)));
  }
  Status remove(const std::string& file) override {
    std::error_code ec;
    fs::remove(path_of(file), ec);
    if (ec) return unavailable("the movie's file could not be removed: " + ec.message());
    return {};
  }
  Result<Download> download(const std::string& file) override {
    return Download{.path = path_of(file), .url = {}};
  }

 private:
  std::string path_of(const std::string& file) const { return (fs::path(dir_) / file).string(); }

  const std::string dir_;
};

// A downloaded copy, removed when the last holder lets it go.
class CopiedFile final : public LocalFile {
 public:
  explicit CopiedFile(std::string path) : path_(std::move(path)) {}
  ~CopiedFile() override {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
};

class S3Media final : public MediaStore {
 public:
  S3Media(aws::S3Location location, std::unique_ptr<aws::S3Client> s3, std::string work_dir,
          Clock& clock)
      : location_(std::move(location)),
        s3_(std::move(s3)),
        work_dir_(std::move(work_dir)),
        copies_dir_((fs::path(work_dir_) / kCopiesFolder).string()),
        clock_(clock) {}
  ~S3Media() override {
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
  }

  const std::string& work_dir() const override { return work_dir_; }
  std::string describe() const override {
    return "S3 s3://" + location_.bucket + "/" + location_.prefix;
  }

  Status keep(const std::string& local_path, const std::string& file,
              const std::string& content_type) override {
    const Status put = s3_->put_file(key_of(file), local_path, content_type);
    std::error_code ec;
    fs::remove(local_path, ec);
    return storage_failure(put, "upload not kept");
  }
  Status check_exists(const std::string& file) override {
    const Result<aws::S3ObjectInfo> head = s3_->head(key_of(file));
    if (head.status().code() == Code::kNotFound) return missing(file);
    return storage_failure(head.status(), "checking the movie's file");
  }
  // One copy per file at a time, shared by its readers.
  Result<std::shared_ptr<const LocalFile>> local(const std::string& file) override {
    MutexLock lock(mu_);
    while (true) {
      if (auto it = copies_.find(file); it != copies_.end()) {
        if (std::shared_ptr<const LocalFile> held = it->second.lock()) return held;
        copies_.erase(it);
      }
      if (!fetching_.contains(file)) break;
      fetched_.wait(mu_);  // another caller is downloading it
    }
    fetching_.insert(file);
    lock.unlock();
    Result<std::shared_ptr<const LocalFile>> copy = fetch(file);
    lock.lock();
    fetching_.erase(file);
    if (copy.ok()) copies_[file] = *copy;
    fetched_.notify_all();
    return copy;
  }
  Status remove(const std::string& file) override {
    return storage_failure(s3_->remove(key_of(file)), "removing the movie's file");
  }
  Result<Download> download(const std::string& file) override {
    Result<std::string> url = s3_->presign_get(key_of(file), kDownloadUrlTtl, clock_.wall_now());
    if (!url.ok()) return storage_failure(url.status(), "signing the movie's download URL");
    return Download{.path = {}, .url = *std::move(url)};
  }

 private:
  std::string key_of(const std::string& file) const { return location_.prefix + file; }

  // After a HEAD's 404, which S3 sends for a missing bucket as for a missing
  // key: a GET's answer says which (NoSuchKey or NoSuchBucket), so that a
  // movie is never taken for missing its file while the bucket is. OK if
  // the GET finds the file after all.
  Status missing(const std::string& file) {
    const Result<aws::S3Range> first = s3_->get_range(key_of(file), 0, 0);
    if (first.status().code() == Code::kNotFound) return not_found(std::string(kFileMissing));
    return storage_failure(first.status(), "checking the movie's file");
  }

  Result<std::shared_ptr<const LocalFile>> fetch(const std::string& file) {
    std::error_code ec;
    fs::create_directories(copies_dir_, ec);
    if (ec) {
      return unavailable("storage unavailable: the work folder '" + copies_dir_ +
                         "': " + ec.message());
    }
    // Named apart from every other copy of the same file this process made.
    const std::string path =
        (fs::path(copies_dir_) / (std::to_string(++copies_made_) + "-" + file)).string();
    const Status got = s3_->get_to_file(key_of(file), path);
    if (got.code() == Code::kNotFound) {
      LEASEHOLD_RETURN_IF_ERROR(missing(file));
      return unavailable("storage unavailable: the movie's file '" + key_of(file) +
                         "' was found only after it was missed; try again");
    }
    if (!got.ok()) return storage_failure(got, "reading the movie's file");
    return std::shared_ptr<const LocalFile>(std::make_shared<CopiedFile>(path));
  }

  const aws::S3Location location_;
  const std::unique_ptr<aws::S3Client> s3_;
  const std::string work_dir_;
  const std::string copies_dir_;
  Clock& clock_;
  std::atomic<uint64_t> copies_made_{0};
  Mutex mu_;
  CondVar fetched_;
  std::map<std::string, std::weak_ptr<const LocalFile>> copies_ GUARDED_BY(mu_);
  std::set<std::string> fetching_ GUARDED_BY(mu_);
};

RealClock& real_clock() {
  static RealClock clock;
  return clock;
}

Result<std::string> make_work_dir(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string pattern = (fs::path(base) / "leasehold-media-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return unavailable("cannot make a work folder in '" + base + "': " + std::strerror(errno));
  }
  return pattern;
}

}  // namespace

bool is_s3_media(const std::string& where) { return where.starts_with("s3:"); }

Status validate_media(const std::string& where) {
  if (is_s3_media(where)) return aws::parse_s3_uri(where).status();
  if (where.empty()) return invalid_argument("the media folder is empty");
  std::error_code ec;
  if (!fs::is_directory(where, ec)) {
    return invalid_argument("the media folder '" + where + "' is not a folder");
  }
  return {};
}

Result<std::unique_ptr<MediaStore>> open_media(const std::string& where,
                                               const MediaOptions& options) {
  LEASEHOLD_RETURN_IF_ERROR(validate_media(where));
  if (!is_s3_media(where)) return std::unique_ptr<MediaStore>(std::make_unique<FolderMedia>(where));
  LEASEHOLD_ASSIGN_OR_RETURN(aws::S3Location location, aws::parse_s3_uri(where));
  Clock& clock = options.clock != nullptr ? *options.clock : real_clock();
  aws::S3ClientOptions s3;
  s3.bucket = location.bucket;
  s3.region = location.region;
  s3.endpoint = location.endpoint;
  s3.clock = &clock;
  s3.multipart_threshold_bytes = options.s3_part_bytes;
  s3.part_size_bytes = options.s3_part_bytes;
  s3.request_timeout = options.s3_request_timeout;
  s3.info_log = options.log;
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<aws::S3Client> client,
                             aws::S3Client::open(std::move(s3)));
  LEASEHOLD_ASSIGN_OR_RETURN(std::string work_dir, make_work_dir(options.temp_parent));
  return std::unique_ptr<MediaStore>(std::make_unique<S3Media>(
      std::move(location), std::move(client), std::move(work_dir), clock));
}

}  // namespace leasehold::movies
