#include "diagnostics.hpp"

#include <cstdio>
#include <cstdlib>

#include "summary.hpp"

namespace redbloom::cli {
namespace {

std::string g_command;
bool g_json = false;
bool g_quiet = false;
std::string g_server_origin;

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

void report_created(std::string_view message) {
  report("note", "note: ", message);
}

void note_implicit_server() {
  const char* env = std::getenv("REDIS_URL");
  g_server_origin = env != nullptr && *env != '\0'
                        ? "the server of $REDIS_URL, used because no Redis URI was given"
                        : "the default server redis://127.0.0.1:6379, used because no Redis URI "
                          "was given and $REDIS_URL is unset; give --redis URI or set REDIS_URL";
}

std::string error_with_origin(std::string_view message) {
  std::string text(message);
  if (!g_server_origin.empty() && text.find(": connect: ") != std::string::npos) {
    text += " (" + g_server_origin + ")";
  }
  return text;
}

void report_line(std::string_view line) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

}  // namespace redbloom::cli
