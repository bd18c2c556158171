// Everything a user of the redbloom library needs: start with filter.hpp.
#pragma once

#include "redbloom/error.hpp"
#include "redbloom/exact_set.hpp"
#include "redbloom/file_access.hpp"
#include "redbloom/file_faults.hpp"
#include "redbloom/filter.hpp"
#include "redbloom/hash.hpp"
#include "redbloom/known_set.hpp"
#include "redbloom/location.hpp"
#include "redbloom/params.hpp"
#include "redbloom/redis_endpoint.hpp"
#include "redbloom/sizing.hpp"
#include "redbloom/store.hpp"
#include "redbloom/stream.hpp"
#include "redbloom/transfer.hpp"
