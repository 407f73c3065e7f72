// Sink: where a worker writes the messages it streams, one JSON line each
// (fleet/message.h), and what it flushes before it checkpoints.
//
//   jsonl:PATH  appends to PATH (created 0644 if absent), flush() is
//               fdatasync: what a checkpoint covers survives a crash of the
//               machine, not only of the process
//   stdout      standard output; flush() has nothing to wait for
//
// Each write() is one write(2) of whole lines straight to the file, with no
// buffer in the process: a line the worker has written is in the file even
// if the worker is killed or paused the next instant, and a worker that has
// stopped writing leaves nothing behind to appear later. A write may carry
// several lines (the worker writes those of one batch of messages
// together), never part of one. Thread-safe: writes from several threads
// never interleave.
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
  // Appends `lines`: one or more whole lines, each ending in a newline, in
  // one write(2) (more only if the kernel takes a part). Sets
  // `*written_bytes` to how much of `lines` reached the sink: all of it, or
  // with kUnavailable, when a write failed (disk full, closed pipe), less:
  // the lines wholly within it are in the sink, the next one partly.
  // REQUIRES: `lines` is empty or ends in '\n'; written_bytes is not null.
  virtual Status write(std::string_view lines, size_t* written_bytes) = 0;
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
