// Built with what the command or the Python package builds with, this must compile: the
// control for internal_include.cpp, showing that its failure is the include path's doing.
#include "redbloom/redbloom.hpp"

int layers_probe_public() {
  return 0;
}
