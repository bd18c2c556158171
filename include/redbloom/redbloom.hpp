// Everything a user of the redbloom library needs.
#pragma once

#include "redbloom/bit_order.hpp"
#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/file_store.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/memory_store.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/redis_store.hpp"
#include "redbloom/sharded_store.hpp"
#include "redbloom/sharding.hpp"
#include "redbloom/sizing.hpp"
#include "redbloom/transfer.hpp"
