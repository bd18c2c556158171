// Built with what the command or the Python package builds with, this must NOT compile: they
// use the public API alone, and src/ (the library's internals) is not on their include path.
#include "redis/redis_store.hpp"

int layers_probe_internal() {
  return 0;
}
