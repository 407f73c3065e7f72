// A session's checkpoints, in a few items (fleet/positions.h).
#include "fleet/positions.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <vector>

#include "base/packed.h"
#include "base/text.h"
#include "fleet/members.h"

namespace leasehold::fleet {
namespace {

constexpr std::string_view kPositionsPrefix = "POSITIONS#";
constexpr char kPartsAttr[] = "parts";
constexpr char kGenAttr[] = "gen";
constexpr char kWrittenAtMsAttr[] = "written_at_ms";
constexpr char kPositionsAttr[] = "positions";
constexpr char kPackedAttr[] = "positions_z";
// The most text a part's packed positions may unpack to: its connections'
// lines at their longest (a 128-byte ID and five 20-digit numbers).
constexpr size_t kUnpackedMax = kPositionsPerPart * 256;
// More parts than this are not read: the most a worker may hold, in parts.
constexpr int64_t kPartsMax = 100'000 / static_cast<int64_t>(kPositionsPerPart) + 1;

// A position, or the more advanced of two of the same lease.
void keep(Positions& out, Position p) {
  const auto it = out.find(p.id);
  if (it != out.end() && std::tie(it->second.epoch, it->second.seq) >= std::tie(p.epoch, p.seq)) {
    return;
  }
  out.insert_or_assign(p.id, std::move(p));
}

// The positions an item holds, packed or (written by an older build) not.
void parse_item(const Item& item, Positions& out) {
  const int64_t written_at_ms = get_int_or(item, kWrittenAtMsAttr);
  if (const std::string* packed = get_string(item, kPackedAttr)) {
    if (const std::optional<std::string> text = unpack_text(*packed, kUnpackedMax)) {
      parse_positions(*text, written_at_ms, out);
    }
    return;
  }
  parse_positions(get_string_or(item, kPositionsAttr), written_at_ms, out);
}

}  // namespace

size_t positions_parts(size_t max_connections) {
  return std::max<size_t>(1, (max_connections + kPositionsPerPart - 1) / kPositionsPerPart);
}

size_t position_part(std::string_view id, size_t parts) {
  uint64_t h = 14695981039346656037ULL;
  for (const char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return static_cast<size_t>(h % std::max<size_t>(parts, 1));
}

Key positions_key(std::string_view session, size_t part) {
  return Key{std::string(kPositionsPrefix) + std::string(session) + "#" + std::to_string(part), ""};
}

std::string format_positions(std::span<const Position> positions, int64_t now_ms) {
  // By ID, so that what lines share sits together when packed.
  std::vector<const Position*> sorted;
  sorted.reserve(positions.size());
  for (const Position& p : positions) sorted.push_back(&p);
  std::ranges::sort(sorted, {}, &Position::id);
  std::string out;
  out.reserve(positions.size() * 40);
  for (const Position* at : sorted) {
    const Position& p = *at;
    const int64_t age =
        p.last_message_at_ms == 0 ? -1 : std::max<int64_t>(0, now_ms - p.last_message_at_ms);
    out += p.id;
    for (const int64_t v : {p.epoch, p.seq, p.messages, p.reconnects, age}) {
      out += ' ';
      out += std::to_string(v);
    }
    out += '\n';
  }
  return out;
}

void parse_positions(std::string_view text, int64_t written_at_ms, Positions& out) {
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos) continue;
    Position p;
    p.id = std::string(line.substr(0, space));
    line.remove_prefix(space);
    int64_t age = 0;
    if (!next_int(line, p.epoch) || !next_int(line, p.seq) || !next_int(line, p.messages) ||
        !next_int(line, p.reconnects) || !next_int(line, age) || !line.empty()) {
      continue;
    }
    // An age that takes the time past int64 (a damaged item) is not a
    // position.
    if (age >= 0 && __builtin_sub_overflow(written_at_ms, age, &p.last_message_at_ms)) continue;
    if (age < 0) p.last_message_at_ms = 0;
    keep(out, std::move(p));
  }
}

UpdateRequest positions_write(std::string_view session, size_t part, size_t parts, int64_t gen,
                              int64_t now_ms, std::span<const Position> positions) {
  UpdateRequest r;
  r.key = positions_key(session, part);
  r.update.set(kPartsAttr, static_cast<int64_t>(parts))
      .set(kGenAttr, gen)
      .set(kWrittenAtMsAttr, now_ms)
      .returning_updated_only();
  std::string text = format_positions(positions, now_ms);
  std::string packed = pack_text(text);
  if (packed.empty()) {
    r.update.set(kPositionsAttr, std::move(text)).remove(kPackedAttr);
  } else {
    r.update.set(kPackedAttr, std::move(packed)).remove(kPositionsAttr);
  }
  r.condition = cond::not_exists(kGenAttr) || cond::lt(kGenAttr, gen);
  return r;
}

Result<Positions> read_positions(ItemStore& store, std::string_view session, bool consistent) {
  Positions out;
  Result<Item> first = store.get(kWorkersTable, positions_key(session, 0), consistent);
  if (first.status().code() == Code::kNotFound) return out;
  if (!first.ok()) return first.status().with_context("reading the positions of a session");
  parse_item(*first, out);
  const int64_t parts = std::clamp<int64_t>(get_int_or(*first, kPartsAttr, 1), 1, kPartsMax);
  if (parts > 1) {
    std::vector<Key> keys;
    for (int64_t part = 1; part < parts; ++part) {
      keys.push_back(positions_key(session, static_cast<size_t>(part)));
    }
    Result<std::vector<Item>> rest = store.batch_get(kWorkersTable, keys);
    if (!rest.ok()) return rest.status().with_context("reading the positions of a session");
    for (const Item& item : *rest) parse_item(item, out);
  }
  return out;
}

const Position* find_position(const Positions& positions, std::string_view id, int64_t epoch) {
  const auto it = positions.find(id);
  return it != positions.end() && it->second.epoch == epoch ? &it->second : nullptr;
}

Status remove_positions(ItemStore& store, std::string_view session) {
  Result<Item> first = store.get(kWorkersTable, positions_key(session, 0), /*consistent=*/true);
  if (first.status().code() == Code::kNotFound) return {};
  if (!first.ok()) return first.status().with_context("removing the positions of a session");
  const int64_t parts = std::clamp<int64_t>(get_int_or(*first, kPartsAttr, 1), 1, kPartsMax);
  // Part 0 last: while it is there, the others can be found.
  for (int64_t part = parts - 1; part >= 0; --part) {
    LEASEHOLD_RETURN_IF_ERROR(
        store.remove(kWorkersTable, positions_key(session, static_cast<size_t>(part)), Condition())
            .with_context("removing the positions of a session"));
  }
  return {};
}

}  // namespace leasehold::fleet
