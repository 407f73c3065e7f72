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
// together), never part of one: a write that fails part way takes the part
// of a line it left back out of the file before anything else is written.
//
// What goes out is decided at the last moment, under the lock that orders
// the sink's writes (BeforeWrite), so that a writer that had to wait for
// another's write still checks its lease, and stamps its lines, just before
// its bytes go out. flush() does not take that lock: a write never waits
// for an fdatasync. Thread-safe: writes from several threads never
// interleave.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "leasehold/status.h"

namespace leasehold::fleet {

// What a write does at the last moment: called by Sink::write() under the
// sink's write lock, just before the bytes go out.
class BeforeWrite {
 public:
  virtual ~BeforeWrite() = default;
  // The lines to write now (empty, or whole lines each ending in '\n'),
  // valid until write() returns; or an error, and then nothing is written
  // and write() returns it.
  virtual Result<std::string_view> lines() = 0;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Appends the lines `before` gives: one or more whole lines in one
  // write(2) (more only if the kernel takes a part). Sets `*written_bytes`
  // to how much of them reached the sink: all, or with kUnavailable, when a
  // write failed (disk full, closed pipe), less: the lines wholly within it
  // are in the sink, and the part of the next one is taken back out (if it
  // cannot be, every later write fails until it is). `before`'s error is
  // returned as it is, with nothing written.
  // REQUIRES: written_bytes is not null.
  virtual Status write(BeforeWrite& before, size_t* written_bytes) = 0;
  // write() of `lines` as they are.
  Status write_lines(std::string_view lines, size_t* written_bytes);
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
