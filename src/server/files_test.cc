// Upload files (new, private, unguessable, removed unless taken) and send
// files (sizes, reads at offsets, a missing file), on a temporary directory.
#include "server/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "testing/temp_dir.h"

namespace leasehold::server {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  size_t files_in_dir() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }

  const leasehold::testing::TempDir tmp_{"leasehold-files-"};
  const std::string dir_ = tmp_.string();
  SystemRandom random_;
};

TEST_F(FilesTest, AnUploadFileIsNewPrivateAndUnguessablyNamed) {
  std::set<std::string> names;
  for (int i = 0; i < 3; ++i) {
    auto file = UploadFile::create(dir_, random_);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const fs::path path((*file)->path());
    EXPECT_EQ(path.parent_path(), fs::path(dir_));
    EXPECT_TRUE(is_well_formed_token(path.stem().string())) << path;
    EXPECT_EQ(path.extension(), ".upload");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(st.st_size, 0);
    names.insert(path.string());
  }
  EXPECT_EQ(names.size(), 3u);
  EXPECT_EQ(files_in_dir(), 0u);  // each removed with its UploadFile
}

TEST_F(FilesTest, AnUploadFileHoldsWhatWasWrittenUntilItGoes) {
  auto file = UploadFile::create(dir_, random_);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->write("hello, ").ok());
  ASSERT_TRUE((*file)->write("world").ok());
  EXPECT_EQ((*file)->bytes_written(), 12u);
  ASSERT_TRUE((*file)->close().ok());
  std::ifstream in((*file)->path());
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "hello, world");
  file->reset();
  EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(FilesTest, AnUploadFileRenamedAwayIsKept) {
  const fs::path kept = fs::path(dir_) / "kept";
  {
    auto file = UploadFile::create(dir_, random_);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->write("x").ok());
    ASSERT_TRUE((*file)->close().ok());
    fs::rename((*file)->path(), kept);
  }
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(FilesTest, NoUploadFileInAMissingDirectory) {
  auto file = UploadFile::create(dir_ + "/missing", random_);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), Code::kUnavailable);
}

TEST_F(FilesTest, ASendFileReadsAtOffsets) {
  const std::string path = dir_ + "/data";
  std::ofstream(path) << "0123456789";
  auto file = SendFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ((*file)->size(), 10u);
  ::unlink(path.c_str());  // still readable once open
  char buffer[4];
  auto read = (*file)->read_at(8, buffer);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(std::string(buffer, *read), "89");
  read = (*file)->read_at(2, buffer);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(std::string(buffer, *read), "2345");
  read = (*file)->read_at(10, buffer);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, 0u);
}

TEST_F(FilesTest, ASendFileThatIsMissingOrNotAFileIsRefused) {
  auto missing = SendFile::open(dir_ + "/missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  auto directory = SendFile::open(dir_);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::server
