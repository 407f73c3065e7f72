// The worker's keeper loop: checkpoints, planned before the sink's flush,
// and reconnects of upstream connections that ended.
#include <algorithm>

#include "base/logging.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {

using worker_parts::kCheckpointBatchMax;
using worker_parts::State;
using worker_parts::Stream;

// ---------------------------------------------------------------- keeper loop

void Worker::Impl::keeper_loop() {
  while (true) {
    {
      MutexLock lock(mu_);
      while (!stopping_ && !keeper_woken_) {
        const MonoTime due = keeper_due();
        if (clock_.mono_now() >= due) break;
        keeper_cv_.wait_until(mu_, clock_, due);
      }
      if (stopping_) return;
      keeper_woken_ = false;
    }
    keeper_work();
  }
}

// The next checkpoint, or the earliest reconnect due before it.
MonoTime Worker::Impl::keeper_due() {
  if (next_checkpoint_ == MonoTime{})
    next_checkpoint_ = clock_.mono_now() + options_.checkpoint_every;
  MonoTime due = next_checkpoint_;
  for (const auto& [id, s] : streams_) {
    MutexLock l(s->mu);
    if (s->state == State::kWaiting) due = std::min(due, s->reconnect_at);
  }
  return due;
}

void Worker::Impl::keeper_work() {
  // Lost streams are forgotten (their leases are gone; nothing to write).
  for (const auto& s : snapshot()) {
    bool lost = false;
    {
      MutexLock l(s->mu);
      lost = s->state == State::kLost;
    }
    if (lost) forget(s->id);
  }
  bool checkpoint_due = false;
  {
    MutexLock lock(mu_);
    checkpoint_due = clock_.mono_now() >= next_checkpoint_;
  }
  if (checkpoint_due) {
    checkpoint_all();
    MutexLock lock(mu_);
    next_checkpoint_ = clock_.mono_now() + options_.checkpoint_every;
  }
  reconnect_due();
}

void Worker::Impl::checkpoint_all() {
  const std::vector<std::shared_ptr<Stream>> streams = snapshot();
  checkpoint(streams);
  int64_t lag = 0;
  for (const auto& s : streams) {
    MutexLock l(s->mu);
    lag += s->written_seq - s->checkpointed_seq;
  }
  m_.checkpoint_lag.set(static_cast<double>(lag));
}

// Writes last_seq (and last_error and the figures, if they changed) of the
// streams, many per store call. Never moves last_seq back. What each covers
// is read before the flush: a line written while the flush runs may not be
// durable when it returns.
void Worker::Impl::checkpoint(const std::vector<std::shared_ptr<Stream>>& streams) {
  std::vector<Checkpoint> planned;
  bool covers_lines = false;
  for (const auto& s : streams) {
    if (std::optional<Checkpoint> c = plan_checkpoint(s)) {
      covers_lines = covers_lines || !c->forward.is_true();
      planned.push_back(std::move(*c));
    }
  }
  if (covers_lines) {
    const Status flushed = sink_.flush();
    note_sink(flushed, /*write=*/false);
    if (!flushed.ok()) {
      log_to(options_.logger, LogLevel::kError, "flushing the sink: {}", flushed.message());
      return;  // no checkpoint may cover what is not durable
    }
  }
  for (size_t at = 0; at < planned.size(); at += kCheckpointBatchMax) {
    const size_t end = std::min(planned.size(), at + kCheckpointBatchMax);
    std::vector<FencedWrite> writes;
    writes.reserve(end - at);
    for (size_t i = at; i < end; ++i) {
      writes.push_back({&planned[i].lease, planned[i].update, planned[i].forward});
    }
    const std::vector<Result<Item>> written = conn_leases_.fenced_write_each(writes);
    for (size_t i = at; i < end; ++i) finish_checkpoint(planned[i], written[i - at]);
  }
}

std::optional<Worker::Impl::Checkpoint> Worker::Impl::plan_checkpoint(
    const std::shared_ptr<Stream>& stream) {
  Checkpoint c;
  int64_t checkpointed = 0;
  bool figures = false;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kClosing || stream->state == State::kLost) return std::nullopt;
    const MonoTime now = clock_.mono_now();
    // Up long enough: the error it had before is over.
    if (stream->state == State::kStreaming &&
        now - stream->opened_at >= options_.upstream_stable_after && !stream->last_error.empty()) {
      stream->last_error.clear();
      stream->error_changed = true;
    }
    c.seq = stream->written_seq;
    checkpointed = stream->checkpointed_seq;
    c.error = stream->last_error;
    figures = c.seq > checkpointed || stream->reconnects_changed;
    if (!figures && !stream->error_changed) return std::nullopt;
    if (stream->error_changed) {
      c.update.set(kLastErrorAttr, c.error).set(kLastErrorAtMsAttr, to_unix_ms(clock_.wall_now()));
    }
    if (figures) {
      c.update.set(kMessagesAttr, static_cast<int64_t>(stream->messages))
          .set(kReconnectsAttr, static_cast<int64_t>(stream->reconnects))
          .set(kLastMessageAtMsAttr, stream->last_message_at_ms);
      c.reconnects = stream->reconnects;
    }
  }
  std::optional<Lease> lease = renewer_.get(stream->renew_id);
  if (!lease) return std::nullopt;
  c.stream = stream;
  c.lease = std::move(*lease);
  // Not sent past the session's deadline either (fenced_write_each).
  c.lease.valid_until = deadline_of(*stream, c.lease);
  if (c.seq > checkpointed) {
    c.update.set(kLastSeqAttr, c.seq);
    c.forward = cond::lt(kLastSeqAttr, c.seq) || cond::not_exists(kLastSeqAttr);
  }
  return c;
}

void Worker::Impl::finish_checkpoint(const Checkpoint& c, const Result<Item>& written) {
  const bool applied = written.ok();
  // The lease is still ours and only `forward` failed: a checkpoint at or
  // past c.seq is there already (a write whose answer was lost).
  const bool already = written.status().code() == Code::kConditionFailed;
  if (!applied && !already) {
    log_to(options_.logger, LogLevel::kWarn, "checkpoint of {}: {}", c.stream->id,
           written.status().message());
    return;
  }
  if (applied) ++checkpoints_;
  MutexLock l(c.stream->mu);
  c.stream->checkpointed_seq = std::max(c.stream->checkpointed_seq, c.seq);
  if (applied && c.stream->last_error == c.error) c.stream->error_changed = false;
  if (applied && c.stream->reconnects == c.reconnects) c.stream->reconnects_changed = false;
}

void Worker::Impl::reconnect_due() {
  const MonoTime now = clock_.mono_now();
  for (const auto& s : snapshot()) {
    {
      MutexLock l(s->mu);
      if (s->state != State::kWaiting || s->reconnect_at > now) continue;
    }
    // Resume from a checkpoint of everything written, as the URL says.
    checkpoint({s});
    connect(s);
  }
}

}  // namespace leasehold::fleet
