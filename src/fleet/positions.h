// Where a worker's session has got to in each connection it holds: its
// checkpoints, all in a few items of the table fleet_workers instead of one
// write per connection. AWS bills a write by the KB of the item it writes
// (and again for each index it changes): a checkpoint of a connection's own
// item cost about 2 write units (its 1.6 KB and the orphan index), a line
// here about 30 bytes.
//
// A session's connections are spread over `parts` items by a hash of their
// IDs (parts fixed for the session, kPositionsPerPart connections each at
// most), so that an item stays far below DynamoDB's 400 KB:
//
//   Pk              "POSITIONS#<session token>#<part>"
//   parts           int     the session's number of parts
//   gen             int     the write's number in the session: a write lands
//                           only over a lower one, so a late one never moves
//                           a position back
//   written_at_ms   int     Unix ms of the write
//   positions_z     string  the positions' text below, deflated (zlib's
//                           format, RFC 1950) and in base64: about half the
//                           KB to bill (`positions`, the text itself, where
//                           zlib failed and in items of older builds)
//
// The text has a line per connection, by ID:
//   "<id> <epoch> <seq> <messages> <reconnects> <age>\n",
// `epoch` that of the lease it was streamed under, `seq` the last sequence
// number the sink holds, `age` written_at_ms - last_message_at_ms (-1: none).
//
// The items have no `kind`, so the index of members does not hold them.
// Part 0 is written with every write of the session, so that a reader knows
// `parts`. The worker writes them every checkpoint period (only the parts
// that changed) under its session's deadline; a connection's own item gets
// `last_seq` when it is handed over or released, as before, and when a
// worker takes it at a position read here (so that whoever takes it next
// finds at least that there). A position counts only for the lease `epoch`
// it names: one of an earlier holding, or of a connection since removed and
// added again, is never taken for the present one.
//
// Thread-safe: plain functions on a store.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr size_t kPositionsPerPart = 1000;

struct Position {
  std::string id;
  int64_t epoch = 0;
  int64_t seq = 0;
  int64_t messages = 0;
  int64_t reconnects = 0;
  int64_t last_message_at_ms = 0;  // 0: none yet

  bool operator==(const Position&) const = default;
};

using Positions = std::map<std::string, Position, std::less<>>;

// The parts of a session whose worker holds at most `max_connections`.
size_t positions_parts(size_t max_connections);
// The part a connection's position is in (FNV-1a of its ID: the same on
// every machine and build).
size_t position_part(std::string_view id, size_t parts);
Key positions_key(std::string_view session, size_t part);

// The write of part `part` of `parts`: every position given (all of that
// part's), numbered `gen`, at wall time `now_ms`.
UpdateRequest positions_write(std::string_view session, size_t part, size_t parts, int64_t gen,
                              int64_t now_ms, std::span<const Position> positions);

// A session's positions, by connection ID: empty if it wrote none. Parts
// that cannot be unpacked, and lines that cannot be parsed, are skipped.
Result<Positions> read_positions(ItemStore& store, std::string_view session, bool consistent);

// The position of connection `id` under lease `epoch` in `positions`, if
// there is one.
const Position* find_position(const Positions& positions, std::string_view id, int64_t epoch);

// Deletes a session's positions (every part).
Status remove_positions(ItemStore& store, std::string_view session);

// The positions' text (by ID), and back (lines that do not parse are
// skipped); exposed for the tests.
std::string format_positions(std::span<const Position> positions, int64_t now_ms);
void parse_positions(std::string_view text, int64_t written_at_ms, Positions& out);

}  // namespace leasehold::fleet
