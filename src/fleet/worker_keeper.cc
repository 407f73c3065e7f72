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
// streams, many per store call; with a session, the positions of all its
// streams to its positions items, and last_error alone to a stream's item.
// Never moves last_seq back. What each covers is read before the flush: a
// line written while the flush runs may not be durable when it returns.
void Worker::Impl::checkpoint(const std::vector<std::shared_ptr<Stream>>& streams) {
  const std::optional<SessionNow> session = sessions() ? current_session() : std::nullopt;
  std::vector<Checkpoint> planned;
  bool covers_lines = false;
  for (const auto& s : streams) {
    if (std::optional<Checkpoint> c = plan_checkpoint(s, /*item_figures=*/!session)) {
      covers_lines = covers_lines || !c->forward.is_true();
      planned.push_back(std::move(*c));
    }
  }
  std::vector<PlannedPosition> positions;
  if (session) positions = plan_positions(*session, covers_lines);
  if (covers_lines) {
    const Status flushed = sink_.flush();
    note_sink(flushed, /*write=*/false);
    if (!flushed.ok()) {
      log_to(options_.logger, LogLevel::kError, "flushing the sink: {}", flushed.message());
      return;  // no checkpoint may cover what is not durable
    }
  }
  for (const Checkpoint& c : planned) note_flushed(c.stream, c.seq);
  for (const PlannedPosition& p : positions) note_flushed(p.stream, p.position.seq);
  if (session && !positions.empty()) write_positions(*session, positions);
  write_checkpoints(planned);
}

void Worker::Impl::write_checkpoints(const std::vector<Checkpoint>& planned) {
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

void Worker::Impl::note_flushed(const std::shared_ptr<Stream>& stream, int64_t seq) {
  MutexLock l(stream->mu);
  stream->resume_seq = std::max(stream->resume_seq, seq);
}

// With `item_figures` false (a session's positions carry them), only a
// changed last_error.
std::optional<Worker::Impl::Checkpoint> Worker::Impl::plan_checkpoint(
    const std::shared_ptr<Stream>& stream, bool item_figures) {
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
    c.reconnects = stream->reconnects;
    figures = item_figures && (c.seq > checkpointed || stream->reconnects_changed);
    if (!figures && !stream->error_changed) return std::nullopt;
    if (stream->error_changed) {
      c.update.set(kLastErrorAttr, c.error).set(kLastErrorAtMsAttr, to_unix_ms(clock_.wall_now()));
    }
    if (figures) {
      c.update.set(kMessagesAttr, static_cast<int64_t>(stream->messages))
          .set(kReconnectsAttr, static_cast<int64_t>(stream->reconnects))
          .set(kLastMessageAtMsAttr, stream->last_message_at_ms);
    }
  }
  std::optional<Lease> lease = renewer_.get(stream->renew_id);
  if (!lease) return std::nullopt;
  c.stream = stream;
  c.lease = std::move(*lease);
  // Not sent past the session's deadline either (fenced_write_each).
  c.lease.valid_until = deadline_of(*stream, c.lease);
  if (!item_figures) {
    c.seq = 0;  // the positions carry it
  } else if (c.seq > checkpointed) {
    c.update.set(kLastSeqAttr, c.seq);
    c.forward = cond::lt(kLastSeqAttr, c.seq) || cond::not_exists(kLastSeqAttr);
  }
  if (!figures) c.reconnects = UINT64_MAX;  // not written: reconnects_changed stays
  return c;
}

// Every stream of the session, with what the next positions write would
// say of it.
std::vector<Worker::Impl::PlannedPosition> Worker::Impl::plan_positions(const SessionNow& session,
                                                                        bool& covers_lines) {
  if (positions_session_ != session.token) {
    positions_session_ = session.token;
    positions_started_ = false;
  }
  std::vector<PlannedPosition> out;
  for (const std::shared_ptr<Stream>& s : snapshot()) {
    if (s->session_gen != session.gen) continue;
    PlannedPosition p{s, {}, false};
    MutexLock l(s->mu);
    // One being handed over stays in until it is released, with its final
    // checkpoint, and forgotten: should the release fail and the worker
    // die, its position is here.
    if (s->state == State::kLost) continue;
    p.position = Position{s->id,
                          s->epoch,
                          s->written_seq,
                          static_cast<int64_t>(s->messages),
                          static_cast<int64_t>(s->reconnects),
                          s->last_message_at_ms};
    p.changed = s->written_seq > s->checkpointed_seq || s->reconnects_changed;
    covers_lines = covers_lines || s->written_seq > s->checkpointed_seq;
    out.push_back(std::move(p));
  }
  return out;
}

// The parts that changed (and part 0, which names the parts, once per
// session), each whole, in one call bounded by the session's deadline.
void Worker::Impl::write_positions(const SessionNow& session,
                                   const std::vector<PlannedPosition>& planned) {
  std::vector<std::vector<const PlannedPosition*>> parts(positions_parts_);
  std::vector<bool> changed(positions_parts_, false);
  for (const PlannedPosition& p : planned) {
    const size_t part = position_part(p.position.id, positions_parts_);
    parts[part].push_back(&p);
    if (p.changed) changed[part] = true;
  }
  if (!positions_started_) changed[0] = true;
  const MonoTime now = clock_.mono_now();
  if (now >= session.valid_until) return;
  const int64_t gen = positions_gen_ + 1;
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  std::vector<UpdateRequest> requests;
  std::vector<size_t> written_parts;
  for (size_t part = 0; part < parts.size(); ++part) {
    if (!changed[part]) continue;
    std::vector<Position> positions;
    positions.reserve(parts[part].size());
    for (const PlannedPosition* p : parts[part]) positions.push_back(p->position);
    requests.push_back(
        positions_write(session.token, part, positions_parts_, gen, now_ms, positions));
    written_parts.push_back(part);
  }
  if (requests.empty()) return;
  positions_gen_ = gen;
  const std::vector<Result<Item>> written =
      store_.update_each(kWorkersTable, requests, session.valid_until - now);
  for (size_t i = 0; i < written.size(); ++i) {
    // A later write of this session is there already: one whose answer was
    // lost came in after all.
    const bool applied = written[i].ok() || written[i].status().code() == Code::kConditionFailed;
    if (!applied) {
      log_to(options_.logger, LogLevel::kWarn, "writing the positions of its session: {}",
             written[i].status().message());
      continue;
    }
    if (written_parts[i] == 0) positions_started_ = true;
    for (const PlannedPosition* p : parts[written_parts[i]]) {
      if (!p->changed) continue;
      ++checkpoints_;
      MutexLock l(p->stream->mu);
      p->stream->checkpointed_seq = std::max(p->stream->checkpointed_seq, p->position.seq);
      if (p->stream->reconnects == static_cast<uint64_t>(p->position.reconnects)) {
        p->stream->reconnects_changed = false;
      }
    }
  }
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
    // Resume after everything written, once it is durable: with a session,
    // by a flush alone (its positions are written every period, all at
    // once); without, by a checkpoint, as the URL says.
    if (sessions()) {
      int64_t seq = 0;
      {
        MutexLock l(s->mu);
        seq = s->written_seq;
      }
      const Status flushed = sink_.flush();
      note_sink(flushed, /*write=*/false);
      if (flushed.ok()) note_flushed(s, seq);
      // Why it reconnects, on its item at once, as without a session.
      if (std::optional<Checkpoint> c = plan_checkpoint(s, /*item_figures=*/false)) {
        write_checkpoints({*std::move(c)});
      }
    } else {
      checkpoint({s});
    }
    connect(s);
  }
}

}  // namespace leasehold::fleet
