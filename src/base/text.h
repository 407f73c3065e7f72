// Checks of short human-readable text that goes into stored items: names,
// owners, labels; and the small text helpers more than one layer needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "leasehold/status.h"

namespace leasehold {

// OK if `text` has at most `bytes_max` bytes and no control character (and
// is not empty, unless `may_be_empty`); else kInvalidArgument naming `what`.
Status validate_text(std::string_view what, std::string_view text, size_t bytes_max,
                     bool may_be_empty);

// Appends `s` to `out` as a JSON string: quoted, with '"', '\' and the
// control characters escaped (other bytes as they are). For JSON written as
// text, where building a tree to serialise would cost more than the text.
void append_json_string(std::string_view s, std::string& out);

// `text` as a Status or a log line may carry it: at most `bytes_max` bytes
// ("..." after a cut), each control character or byte past ASCII a '?'. For
// what another party sent (an error code or message of a service, a proxy's
// reply), which may hold anything.
std::string printable(std::string_view text, size_t bytes_max);

// Whether `a` and `b` are the same text but for the case of ASCII letters:
// how HTTP's header names and tokens compare.
bool equal_ignoring_case(std::string_view a, std::string_view b);

// Reads the decimal integer at the start of `text` (after spaces) into
// `out` and removes it from `text`; false, with `text` past its spaces
// only, if none is there. For packed lines of numbers ("3 17 42").
bool next_int(std::string_view& text, int64_t& out);

}  // namespace leasehold
