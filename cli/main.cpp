// redbloom: Bloom filters for deduplication and membership tests, from the command line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "redbloom/error.hpp"

int main(int argc, char** argv) {
  using namespace redbloom::cli;
  CLI::App app{"redbloom: Bloom filters for deduplication and membership tests"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "redbloom 0.1.0");
  int exit_code = kExitOk;
  register_plan(app, exit_code);
  register_create(app, exit_code);
  register_add(app, exit_code);
  register_dedup(app, exit_code);
  register_exists(app, exit_code);
  register_info(app, exit_code);
  register_drop(app, exit_code);
  register_load(app, exit_code);
  register_diff(app, exit_code);
  register_transfers(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const redbloom::InvalidArgument& e) {
    std::fprintf(stderr, "redbloom: %s\n", e.what());
    return kExitUsage;
  } catch (const redbloom::Error& e) {
    std::fprintf(stderr, "redbloom: %s\n", e.what());
    return kExitStorage;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "redbloom: out of memory\n");
    return kExitStorage;
  }
  return exit_code;
}
