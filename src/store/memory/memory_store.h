// An in-process item store: the reference for the conformance suite and the
// substrate of the deterministic simulation. Everything lives in one map under
// one mutex; safe for concurrent use by threads, invisible to other processes.
#pragma once

#include <memory>

#include "leasehold/store.h"

namespace leasehold::store {

std::unique_ptr<ItemStore> make_memory_store();

}  // namespace leasehold::store
