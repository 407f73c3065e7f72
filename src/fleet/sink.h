// Sink: where a worker writes the messages it streams, one JSON line each
// (fleet/message.h), and what it flushes before it checkpoints.
//
//   jsonl:PATH  appends to PATH (created 0644 if absent), flush() is
//               fdatasync: what a checkpoint covers survives a crash of the
//               machine, not only of the process
//   stdout      standard output; flush() has nothing to wait for
//
// Each write() is one write(2) of a whole line straight to the file, with no
// buffer in the process: a line the worker has written is in the file even
// if the worker is killed or paused the next instant, and a worker that has
// stopped writing leaves nothing behind to appear later. Thread-safe: lines
// from several threads never interleave.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "leasehold/status.h"

namespace leasehold::fleet {

class Sink {
 public:
  virtual ~Sink() = default;
  // Appends `line` and a newline. kUnavailable if the write failed (disk
  // full, closed pipe); the line may then be partly written.
  virtual Status write(std::string_view line) = 0;
  // Returns once every line written so far is durable.
  virtual Status flush() = 0;
  virtual std::string describe() const = 0;  // "jsonl:PATH", "stdout"
};

// "jsonl:PATH" or "stdout". kInvalidArgument for another form (nothing is
// created); kUnavailable if the file cannot be opened.
Result<std::unique_ptr<Sink>> open_sink(std::string_view spec);
// Checks the form of `spec` without opening anything.
Status validate_sink_spec(std::string_view spec);

}  // namespace leasehold::fleet
