#include "diagnostics.hpp"

#include <cstdio>

#include "summary.hpp"

namespace redbloom::cli {
namespace {

std::string g_command;
bool g_json = false;
bool g_quiet = false;

void report(const char* type, const char* text_prefix, std::string_view message) {
  if (g_json) {
    std::string line = "{\"type\": " + json_string(type);
    if (!g_command.empty()) line += ", \"command\": " + json_string(g_command);
    line += ", \"message\": " + json_string(message) + "}";
    report_line(line);
  } else {
    report_line(std::string("redbloom: ") + text_prefix + std::string(message));
  }
}

}  // namespace

void set_diagnostics(std::string_view command, bool json, bool quiet) {
  g_command = command;
  g_json = json;
  g_quiet = quiet;
}

bool json_diagnostics() noexcept {
  return g_json;
}

void report_error(std::string_view message) {
  report("error", "", message);
}

void report_warning(std::string_view message) {
  report("warning", "warning: ", message);
}

void report_note(std::string_view message) {
  if (!g_quiet) report("note", "note: ", message);
}

void report_line(std::string_view line) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

}  // namespace redbloom::cli
