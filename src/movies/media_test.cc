// The two MediaStores: a folder, and S3 (fauxqs on a free port), held to the
// same promises: a kept upload is there and its local file gone, a local
// copy holds the bytes and goes with its last holder, a download points at
// them, a removal removes, and an S3 that does not answer, or refuses the
// deployment's credentials or bucket, is never taken for a missing file.
#include "movies/media.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "aws/s3.h"
#include "testing/temp_dir.h"
#include "tests/aws/fake_endpoint.h"
#include "tests/aws/fauxqs_fixture.h"

namespace leasehold::movies {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A movie's bytes: more than one S3 part (the store's part size is set
// small), none repeating.
std::string movie_bytes() {
  std::string bytes;
  for (int i = 0; bytes.size() < (size_t{11} << 20); ++i) bytes += std::to_string(i) + ",";
  return bytes;
}

// A bucket on fauxqs, made if missing.
std::unique_ptr<aws::S3Client> bucket_on(const testing::Fauxqs& fauxqs, const std::string& bucket) {
  aws::S3ClientOptions options;
  options.bucket = bucket;
  options.region = "us-east-1";
  options.endpoint = fauxqs.endpoint();
  Result<std::unique_ptr<aws::S3Client>> s3 = aws::S3Client::open(std::move(options));
  EXPECT_TRUE(s3.ok()) << s3.status().to_string();
  if (!s3.ok()) return nullptr;
  const Status made = (*s3)->create_bucket();
  EXPECT_TRUE(made.ok()) << made.to_string();
  return std::move(s3).value();
}

class MediaTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      fauxqs_ = testing::shared_fauxqs();
      ASSERT_NE(fauxqs_, nullptr);
      const std::string bucket = testing::unique_aws_name("media");
      ASSERT_NE(bucket_on(*fauxqs_, bucket), nullptr);
      where_ = "s3://" + bucket + "/movies?region=us-east-1&endpoint=" + fauxqs_->endpoint();
    } else {
      fs::create_directories(tmp_.path() / "media");
      where_ = (tmp_.path() / "media").string();
    }
    auto media = open_media(
        where_, {.temp_parent = tmp_.path().string(), .clock = nullptr, .s3_part_bytes = 5 << 20});
    ASSERT_TRUE(media.ok()) << media.status().to_string();
    media_ = std::move(media).value();
  }

  // An upload as the server leaves it: a file in the work folder.
  std::string upload(const std::string& bytes) {
    const fs::path path = fs::path(media_->work_dir()) / ("u" + std::to_string(++uploads_));
    write(path, bytes);
    return path.string();
  }

  testing::TempDir tmp_{"media_test_"};
  testing::Fauxqs* fauxqs_ = nullptr;
  std::string where_;
  std::unique_ptr<MediaStore> media_;
  int uploads_ = 0;
};

TEST_P(MediaTest, AKeptUploadIsReadLocallyDownloadedAndRemoved) {
  const std::string bytes = movie_bytes();
  const std::string path = upload(bytes);
  ASSERT_TRUE(media_->keep(path, "a1.avi", "video/x-msvideo").ok());
  EXPECT_FALSE(fs::exists(path)) << "the upload is gone from the work folder";
  EXPECT_TRUE(media_->check_exists("a1.avi").ok());

  Result<std::shared_ptr<const LocalFile>> first = media_->local("a1.avi");
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(read_all((*first)->path()), bytes);
  Result<std::shared_ptr<const LocalFile>> second = media_->local("a1.avi");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->path(), (*first)->path()) << "one copy for its readers at once";
  const std::string copy = (*first)->path();
  first->reset();
  second->reset();
  EXPECT_EQ(fs::exists(copy), !GetParam()) << "a copy goes with its last reader; a folder stays";

  Result<Download> download = media_->download("a1.avi");
  ASSERT_TRUE(download.ok()) << download.status().to_string();
  if (GetParam()) {
    EXPECT_TRUE(download->path.empty());
    EXPECT_NE(download->url.find("/movies/a1.avi?"), std::string::npos) << download->url;
    EXPECT_NE(download->url.find("X-Amz-Expires=300"), std::string::npos) << download->url;
    EXPECT_NE(download->url.find("X-Amz-Signature="), std::string::npos);
  } else {
    EXPECT_EQ(read_all(download->path), bytes);
    EXPECT_TRUE(download->url.empty());
  }

  ASSERT_TRUE(media_->remove("a1.avi").ok());
  EXPECT_TRUE(media_->remove("a1.avi").ok()) << "removing twice is fine";
  EXPECT_EQ(media_->check_exists("a1.avi").code(), Code::kNotFound);
  EXPECT_EQ(media_->local("a1.avi").status().code(), Code::kNotFound);
}

// Not found, in words a user may read: no folder, bucket or key.
TEST_P(MediaTest, AFileNeverKeptIsNotFound) {
  const Status exists = media_->check_exists("nosuch.avi");
  EXPECT_EQ(exists.code(), Code::kNotFound);
  EXPECT_EQ(exists.message(), "the movie's file is missing");
  const Status local = media_->local("nosuch.avi").status();
  EXPECT_EQ(local.code(), Code::kNotFound);
  EXPECT_EQ(local.message(), "the movie's file is missing");
  EXPECT_TRUE(fs::is_directory(media_->work_dir()));
}

TEST_P(MediaTest, TheWorkFolderOfS3GoesWithTheStore) {
  const std::string work = media_->work_dir();
  media_.reset();
  EXPECT_EQ(fs::exists(work), !GetParam());
}

// S3 stalled is unavailable, not a missing file: a probe hands its job back
// rather than calling the movie invalid, and nothing is removed.
TEST(S3MediaTest, AStalledS3IsUnavailableNotMissing) {
  testing::TempDir tmp("media_test_");
  auto fauxqs = testing::Fauxqs::start();
  ASSERT_TRUE(fauxqs.ok()) << fauxqs.status().to_string();
  std::unique_ptr<aws::S3Client> s3 = bucket_on(**fauxqs, "stall");
  ASSERT_NE(s3, nullptr);
  ASSERT_TRUE(s3->put("m/a.avi", "bytes", "video/x-msvideo").ok());
  auto media = open_media("s3://stall/m?region=us-east-1&endpoint=" + (*fauxqs)->endpoint(),
                          {.temp_parent = tmp.path().string(),
                           .clock = nullptr,
                           .s3_part_bytes = 5 << 20,
                           .s3_request_timeout = std::chrono::milliseconds(300)});
  ASSERT_TRUE(media.ok()) << media.status().to_string();
  (*fauxqs)->pause();
  const Status exists = (*media)->check_exists("a.avi");
  const Result<std::shared_ptr<const LocalFile>> local = (*media)->local("a.avi");
  (*fauxqs)->resume();
  for (Code code : {exists.code(), local.status().code()}) {
    EXPECT_TRUE(code == Code::kUnavailable || code == Code::kUnknownOutcome) << code_name(code);
  }
  EXPECT_TRUE((*media)->check_exists("a.avi").ok()) << "still there once S3 answers";
}

// Every use of a file of `media`, which S3 refuses, is unavailable, "storage
// unavailable", with `said` (S3's code, AWS's request ID) for the log; an
// upload not kept (from `dir`) is not left behind.
void expect_all_unavailable(MediaStore& media, const fs::path& dir, const std::string& said) {
  const fs::path upload = dir / "upload";
  write(upload, "bytes");
  const Status kept = media.keep(upload.string(), "a.avi", "video/x-msvideo");
  EXPECT_FALSE(fs::exists(upload));
  for (const Status& s :
       {kept, media.check_exists("a.avi"), media.local("a.avi").status(), media.remove("a.avi")}) {
    EXPECT_EQ(s.code(), Code::kUnavailable) << s.to_string();
    EXPECT_TRUE(s.message().starts_with("storage unavailable: ")) << s.message();
    EXPECT_NE(s.message().find(said), std::string::npos) << s.message();
  }
}

// A bucket that is not there: S3 answers a HEAD 404, as for a missing key,
// and the store asks again with a GET, whose NoSuchBucket makes it
// unavailable. A probe then hands its job back rather than calling the
// movie invalid.
TEST(S3MediaTest, AMissingBucketIsUnavailableNotAMissingFile) {
  testing::TempDir tmp("media_test_");
  testing::Fauxqs* fauxqs = testing::shared_fauxqs();
  ASSERT_NE(fauxqs, nullptr);
  const std::string bucket = testing::unique_aws_name("gone");
  auto media = open_media("s3://" + bucket + "/m?region=us-east-1&endpoint=" + fauxqs->endpoint(),
                          {.temp_parent = tmp.path().string()});
  ASSERT_TRUE(media.ok()) << media.status().to_string();
  expect_all_unavailable(**media, tmp.path(), "NoSuchBucket");
}

// S3 refusing the deployment (its credentials, its permissions, its region)
// makes every operation unavailable, never unauthenticated or forbidden,
// which a server would pass on to a user who is signed in and allowed; the
// message keeps S3's code and AWS's request ID for the log.
TEST(S3MediaTest, RefusedCredentialsAndAccessAreStorageUnavailable) {
  testing::TempDir tmp("media_test_");
  struct Refusal {
    int status;
    std::string code;
  };
  // Credentials to sign with, which the fake S3 refuses whatever they are.
  ::setenv("AWS_ACCESS_KEY_ID", "test", 0);
  ::setenv("AWS_SECRET_ACCESS_KEY", "test", 0);
  for (const Refusal& refusal :
       {Refusal{400, "ExpiredToken"}, Refusal{403, "AccessDenied"},
        Refusal{403, "SignatureDoesNotMatch"}, Refusal{301, "PermanentRedirect"}}) {
    SCOPED_TRACE(refusal.code);
    testing::FakeEndpoint s3([&](const testing::FakeRequest& r) {
      // S3 sends a HEAD's answer without its document.
      const std::string body = r.method == "HEAD" ? ""
                                                  : "<Error><Code>" + refusal.code +
                                                        "</Code><Message>refused</Message>"
                                                        "<RequestId>DOC1</RequestId></Error>";
      return testing::FakeReply{.status = refusal.status,
                                .body = body,
                                .content_type = "application/xml",
                                .headers = {{"x-amz-request-id", "REQ4" + refusal.code}}};
    });
    auto media = open_media("s3://refusing/m?region=us-east-1&endpoint=" + s3.url(),
                            {.temp_parent = tmp.path().string()});
    ASSERT_TRUE(media.ok()) << media.status().to_string();
    expect_all_unavailable(**media, tmp.path(), "AWS request ID REQ4" + refusal.code);
  }
}

INSTANTIATE_TEST_SUITE_P(Media, MediaTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "s3" : "folder");
                         });

}  // namespace
}  // namespace leasehold::movies
