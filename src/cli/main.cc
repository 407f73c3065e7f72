// The `leasehold` binary: runs one command and exits with its code.
//
// Everything happens in run_cli(), which builds the logger once the flags
// say how verbose it should be, and the runtime once the command's input is
// valid (cli/common.h, runtime/runtime.h).
#include <cstdlib>

#include "cli/commands.h"

int main(int argc, char** argv) {
  // FFmpeg (under OpenCV, in the movie tracer) writes its own complaints
  // about a broken file to stderr, where they would break the JSON log;
  // the tracer reports what matters itself. Set before any thread starts,
  // unless the user asked for FFmpeg's messages.
  setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", /*overwrite=*/0);  // AV_LOG_QUIET
  return leasehold::cli::run_cli(argc, argv);
}
