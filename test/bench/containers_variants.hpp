// Included first in every variant of containers_bench.sh: the containers a variant may name.
#pragma once

#include <unordered_map>

#include <boost/container/small_vector.hpp>
#include <boost/unordered/unordered_flat_map.hpp>
