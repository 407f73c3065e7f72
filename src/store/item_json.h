// Items as JSON objects: {"pk":"a","n":5,"held":true}.
//
// JSON's three scalar kinds map one to one onto the item store's types, so
// the encoding is lossless. Used by the SQLite backend (the stored form) and
// by the CLI (the printed form). Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "leasehold/store.h"

namespace leasehold::store {

std::string encode_item(const Item& item);

// Fails with kInternal on anything encode_item() would not produce
// (non-objects, nested values, non-integral numbers).
Result<Item> decode_item(std::string_view json);

}  // namespace leasehold::store
