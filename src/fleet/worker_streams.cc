// The worker's streams: connecting to an upstream, writing its batches of
// messages to the sink under the lease, closing, losing and handing over.
#include <algorithm>
#include <cassert>

#include "base/logging.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {
namespace {

// The last moment of a stream's write, under the sink's lock
// (Sink::write): the lease is checked once more against the local deadline
// given, and the lines are stamped with the time they go out, so that no
// wait for the sink (another stream's write) carries a line past the
// deadline, and each line says when it was written.
class LeasedWrite final : public BeforeWrite {
 public:
  LeasedWrite(Clock& clock, MonoTime valid_until, SinkBatch& batch)
      : clock_(clock), valid_until_(valid_until), batch_(batch) {}

  Result<std::string_view> lines() override {
    checked_at_ = clock_.mono_now();
    // A planted bug, built only with -DLEASEHOLD_PLANT=sink-unchecked, to
    // show that the nemesis catches a sink write that skips this check
    // (docs/reliability.md).
#ifndef LEASEHOLD_PLANT_SINK_UNCHECKED
    if (checked_at_ >= valid_until_) {
      return deadline_exceeded(
          "the lease reached its local deadline before the sink took the write");
    }
#endif
    written_at_ms_ = to_unix_ms(clock_.wall_now());
    batch_.stamp(written_at_ms_);
    return batch_.text();
  }
  MonoTime checked_at() const { return checked_at_; }
  int64_t written_at_ms() const { return written_at_ms_; }

 private:
  Clock& clock_;
  const MonoTime valid_until_;
  SinkBatch& batch_;
  MonoTime checked_at_{};
  int64_t written_at_ms_ = 0;
};

}  // namespace

using worker_parts::kCheckpointBatchMax;
using worker_parts::State;
using worker_parts::Stream;

void Worker::Impl::connect(const std::shared_ptr<Stream>& stream) {
  uint64_t generation = 0;
  std::string url;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kClosing || stream->state == State::kLost) return;
    generation = ++stream->generation;
    stream->state = State::kConnecting;
    url = expand_url(stream->url_template, std::max(stream->checkpointed_seq, stream->resume_seq));
  }
  std::weak_ptr<Stream> weak = stream;
  std::shared_ptr<OpenStreams> open = open_;
  net::WsHandlers handlers;
  handlers.on_open = [this, weak, generation] {
    auto s = weak.lock();
    if (!s) return;
    MutexLock l(s->mu);
    if (s->generation != generation || s->state != State::kConnecting) return;
    // The failure count and last_error stay until it has stayed up a while
    // (upstream_stable_after): a peer that accepts and closes at once is a
    // failure like any other, and writes nothing to the store each time.
    s->state = State::kStreaming;
    s->opened_at = clock_.mono_now();
  };
  handlers.on_messages = [this, weak, generation](std::span<const net::WsMessage> messages) {
    if (auto s = weak.lock()) on_messages(s, generation, messages);
  };
  handlers.on_closed = [this, weak, generation, open](const Status& why) {
    if (auto s = weak.lock()) on_closed(s, generation, why);
    open->done();  // the last this handler does with the worker
  };
  open_->add();
  Result<std::shared_ptr<net::WsStream>> ws = upstream_.connect(url, std::move(handlers));
  if (!ws.ok()) open_->done();  // no handler will run
  MutexLock l(stream->mu);
  if (!ws.ok()) {  // a URL that cannot work: say so, and try again later
    stream->state = State::kWaiting;
    stream->closed_at = clock_.mono_now();
    stream->last_error = ws.status().message();
    stream->error_changed = true;
    stream->reconnect_at = clock_.mono_now() + kReconnectBackoffMax;
    return;
  }
  if (stream->generation == generation &&
      (stream->state == State::kConnecting || stream->state == State::kStreaming)) {
    stream->ws = *ws;
    return;
  }
  // Closed or lost while connecting: this connection is not wanted.
  l.unlock();
  (*ws)->close();
}

// ---------------------------------------------------------------- streams

bool Worker::Impl::still_valid(Stream& stream, MonoTime now) {
  if (now < stream.valid_until) return true;
  // Past the deadline last seen: a renewal (of the lease, or of the session)
  // may have moved it.
  std::optional<Lease> lease = renewer_.get(stream.renew_id);
  if (!lease) return false;
  const MonoTime until = deadline_of(stream, *lease);
  if (now >= until) return false;
  stream.valid_until = until;
  return true;
}

// One batch of a stream's messages (net/websocket.h) becomes one sink write
// of the lines of those that go forward. The rules that keep one writer per
// connection hold for every line of it because everything from the state
// check to the write is done under the stream's lock, which lose(),
// hand_over() and checkpoints take as well:
//   - the stream is open and the messages came on its current upstream
//     connection, else nothing is written (a close or a loss comes first,
//     or waits until this write is done and counted in written_seq);
//   - the lease is checked valid after the lines are made, under the sink's
//     lock at the monotonic time just before the write (LeasedWrite),
//     however long the messages or the write waited, and the lines are
//     stamped with the time they go out;
//   - a line goes in only if its sequence number is above the last one
//     written or batched, so repeats are dropped and nothing goes back;
//   - written_seq moves to the last line wholly in the sink, which is all a
//     checkpoint (after a flush) may cover.
void Worker::Impl::on_messages(const std::shared_ptr<Stream>& stream, uint64_t generation,
                               std::span<const net::WsMessage> messages) {
  // Parsed before the lock: finding a sequence number needs nothing of the
  // stream's state.
  thread_local std::vector<Result<int64_t>> seqs;
  seqs.clear();
  for (const net::WsMessage& m : messages) {
    seqs.push_back(m.text ? find_seq(m.bytes, stream->seq_path)
                          : Result<int64_t>(invalid_argument("a binary message")));
  }
  thread_local SinkBatch batch;
  batch.clear();
  std::shared_ptr<net::WsStream> to_close;
  bool lost = false;
  {
    MutexLock l(stream->mu);
    if (stream->generation != generation ||
        (stream->state != State::kStreaming && stream->state != State::kConnecting)) {
      return;
    }
    // A stamp for now: the write stamps its lines again as it goes out, in
    // place while the number of digits is the same.
    const int64_t stamp_ms = stream->last_message_at_ms;
    for (size_t i = 0; i < messages.size(); ++i) {
      add_if_forward(*stream, seqs[i], messages[i].bytes, stamp_ms, batch);
    }
    // write_batch() checks the lease itself, at the last moment.
    const Status written = !batch.empty()                            ? write_batch(*stream, batch)
                           : still_valid(*stream, clock_.mono_now()) ? Status::ok_status()
                                                                     : deadline_exceeded("");
    if (written.code() == Code::kDeadlineExceeded) {
      stream->state = State::kLost;
      ++stream->generation;
      to_close = std::move(stream->ws);
      lost = true;
    } else if (written.ok()) {
      return;
    } else {
      // The sink failed: stop this stream and retry later, from what was written.
      log_to(options_.logger, LogLevel::kError, "sink: {}", written.message());
      stream->state = State::kWaiting;
      stream->closed_at = clock_.mono_now();
      stream->reconnect_at = clock_.mono_now() + kReconnectBackoffMax;
      ++stream->generation;
      to_close = std::move(stream->ws);
    }
  }
  if (to_close) to_close->close();
  if (lost) {
    ++losses_;
    m_.losses.inc();
    log_to(options_.logger, LogLevel::kWarn, "lost {}: its lease is past its local deadline",
           stream->id);
  }
  wake_keeper();
}

// Adds the message's line to `batch` if its sequence number is above the
// last one written or batched; counts the others.
void Worker::Impl::add_if_forward(Stream& stream, const Result<int64_t>& seq,
                                  std::string_view message, int64_t written_at_ms,
                                  SinkBatch& batch) {
  if (!seq.ok()) return note_bad(stream, seq.status().message());
  const int64_t last = batch.empty() ? stream.written_seq : batch.last_seq();
  if (*seq == last) {
    ++repeats_;
    return;
  }
  if (*seq < last) {
    return note_bad(stream, "sequence number " + std::to_string(*seq) + " goes back from " +
                                std::to_string(last));
  }
  batch.add({stream.id, *seq, options_.id, stream.epoch, written_at_ms, message});
}

// One sink write of `batch`; written_seq moves to its last line that the
// sink took. kDeadlineExceeded, with nothing written, if the lease was past
// its local deadline when the sink was ready for it (and no renewal since
// moved it). REQUIRES: the stream is open for the batch's messages.
Status Worker::Impl::write_batch(Stream& stream, SinkBatch& batch) {
  assert(stream.state == State::kStreaming || stream.state == State::kConnecting);
  assert(!batch.empty() && batch.seq(0) > stream.written_seq);
  size_t bytes = 0;
  LeasedWrite write(clock_, stream.valid_until, batch);
  Status written = sink_.write(write, &bytes);
  int64_t written_at_ms = write.written_at_ms();
  MonoTime written_at = write.checked_at();
  // Past the deadline last seen: a renewal may have moved it.
  if (written.code() == Code::kDeadlineExceeded && still_valid(stream, write.checked_at())) {
    LeasedWrite renewed(clock_, stream.valid_until, batch);
    written = sink_.write(renewed, &bytes);
    written_at_ms = renewed.written_at_ms();
    written_at = renewed.checked_at();
  }
  if (written.code() == Code::kDeadlineExceeded) return written;
  note_sink(written, /*write=*/true);
  const size_t lines = batch.lines_within(bytes);
  assert(written.ok() == (lines == batch.size()));
  if (lines > 0) {
    stream.written_seq = batch.seq(lines - 1);
    stream.messages += lines;
    stream.last_message_at_ms = written_at_ms;
    stream.last_message_mono = written_at;
    if (stream.taken_after_message_at_ms != 0) {
      const int64_t gap_ms = std::max<int64_t>(0, written_at_ms - stream.taken_after_message_at_ms);
      m_.takeover_gap.observe(static_cast<double>(gap_ms) / 1000);
      stream.taken_after_message_at_ms = 0;
    }
    messages_ += lines;
    m_.messages.inc(static_cast<double>(lines));
  }
  return written;
}

void Worker::Impl::note_bad(Stream& stream, std::string_view what) {
  ++bad_messages_;
  m_.bad_messages.inc();
  const MonoTime now = clock_.mono_now();
  if (stream.bad_logged_at != MonoTime{} && now - stream.bad_logged_at < kBadMessageLogEvery) {
    ++stream.bad_unlogged;
    return;
  }
  log_to(options_.logger, LogLevel::kWarn,
         "connection {}: message refused: {} ({} more since last said)", stream.id, what,
         stream.bad_unlogged);
  stream.bad_logged_at = now;
  stream.bad_unlogged = 0;
}

void Worker::Impl::on_closed(const std::shared_ptr<Stream>& stream, uint64_t generation,
                             const Status& why) {
  {
    MutexLock l(stream->mu);
    if (stream->generation != generation ||
        (stream->state != State::kStreaming && stream->state != State::kConnecting)) {
      return;
    }
    const MonoTime now = clock_.mono_now();
    if (stream->state == State::kStreaming &&
        now - stream->opened_at >= options_.upstream_stable_after) {
      stream->failures = 0;  // it was up long enough to start the backoff afresh
    }
    stream->ws.reset();
    stream->state = State::kWaiting;
    stream->closed_at = now;
    ++stream->failures;
    ++stream->reconnects;
    stream->reconnects_changed = true;
    const Duration cap = std::min<Duration>(
        kReconnectBackoffMax, kReconnectBackoffMin * (1 << std::min(stream->failures - 1, 16)));
    stream->reconnect_at = now + jittered(cap * 3 / 4, 1.0 / 3);  // cap/2 .. cap
    if (stream->last_error != why.message()) {
      stream->last_error = why.message();
      stream->error_changed = true;
    }
  }
  ++reconnects_;
  m_.reconnects.inc();
  log_to(options_.logger, LogLevel::kInfo, "connection {}: upstream closed: {}", stream->id,
         why.message());
  wake_keeper();
}

// The lease is gone: close at once, write nothing more, forget the stream.
void Worker::Impl::lose(const std::shared_ptr<Stream>& stream, const Status& why) {
  std::shared_ptr<net::WsStream> ws;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kLost || stream->state == State::kClosing) return;
    stream->state = State::kLost;
    ++stream->generation;
    ws = std::move(stream->ws);
  }
  if (ws) ws->close();
  ++losses_;
  m_.losses.inc();
  log_to(options_.logger, LogLevel::kWarn, "lost {}: {}", stream->id, why.message());
  wake_keeper();
}

// Closes the streams, flushes once, then releases each lease with its final
// checkpoint in the same write.
void Worker::Impl::hand_over(const std::vector<std::shared_ptr<Stream>>& streams,
                             std::string_view why) {
  std::vector<std::shared_ptr<Stream>> closing;
  for (const auto& s : streams) {
    std::shared_ptr<net::WsStream> ws;
    {
      MutexLock l(s->mu);
      if (s->state == State::kLost || s->state == State::kClosing) continue;
      s->state = State::kClosing;
      ++s->generation;
      ws = std::move(s->ws);
    }
    if (ws) ws->close();  // returns once no message is being written for it
    closing.push_back(s);
  }
  if (closing.empty()) return;
  const Status flushed = sink_.flush();
  note_sink(flushed, /*write=*/false);
  // Each lease goes back with its final checkpoint in the same write, many
  // per store call: a stopping worker of 1,000 connections on DynamoDB gives
  // them back in parallel rather than one round trip after another.
  struct Final {
    std::shared_ptr<Stream> stream;
    Lease lease;
    int64_t seq = 0;
  };
  std::vector<Final> finals;
  for (const auto& s : closing) {
    std::optional<Lease> lease = renewer_.remove(s->renew_id);
    if (!lease) continue;  // lost meanwhile: nothing to give back
    // Its session is past its deadline: nothing more is written for it.
    if (clock_.mono_now() >= deadline_of(*s, *lease)) continue;
    MutexLock l(s->mu);
    finals.push_back({s, std::move(*lease), s->written_seq});
  }
  for (size_t at = 0; at < finals.size(); at += kCheckpointBatchMax) {
    const size_t end = std::min(finals.size(), at + kCheckpointBatchMax);
    std::vector<Release> releases;
    for (size_t i = at; i < end; ++i) {
      // Unflushed lines may not be covered: then the lease goes back without them.
      Update final_checkpoint;
      if (flushed.ok() && finals[i].seq > 0) final_checkpoint.set(kLastSeqAttr, finals[i].seq);
      releases.push_back({&finals[i].lease, std::move(final_checkpoint)});
    }
    const std::vector<Status> released = conn_leases_.release_each(releases);
    for (size_t i = at; i < end; ++i) {
      const std::string& id = finals[i].stream->id;
      const Status& result = released[i - at];
      if (result.ok()) {
        ++handovers_;
        m_.handovers.inc();
        log_to(options_.logger, LogLevel::kInfo, "handed over {} at seq {} ({})", id, finals[i].seq,
               why);
        continue;
      }
      log_to(options_.logger, LogLevel::kWarn, "handing over {}: {}", id, result.message());
      // Still held, as far as this worker knows, and streamed by nobody: the
      // release is tried again until it goes through, with its checkpoint.
      if (result.code() != Code::kFailedPrecondition) {
        release_later(id, finals[i].lease, releases[i - at].extra_update);
      }
    }
  }
  {
    MutexLock lock(mu_);
    for (const auto& s : closing) streams_.erase(s->id);
  }
  m_.owned.set(static_cast<double>(snapshot().size()));
}

void Worker::Impl::forget(const std::string& id) {
  std::shared_ptr<Stream> stream;
  {
    MutexLock lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    stream = it->second;
    streams_.erase(it);
  }
  (void)renewer_.remove(stream->renew_id);
  m_.owned.set(static_cast<double>(snapshot().size()));
}

}  // namespace leasehold::fleet
