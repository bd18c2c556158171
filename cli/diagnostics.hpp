// Everything a command says on stderr besides its progress line: errors, warnings, notes and
// the summary. As text ("redbloom: warning: ...") or, with --json, as one JSON object per line
// ({"type": "warning", "command": "dedup", "message": "..."}), so that a script reading
// stderr sees nothing else.
#pragma once

#include <string>
#include <string_view>

namespace redbloom::cli {

// Set once the command line is known (main scans it before parsing, so that even a parse
// error comes out as JSON when --json was given). `quiet` drops notes, not warnings or errors.
void set_diagnostics(std::string_view command, bool json, bool quiet);
[[nodiscard]] bool json_diagnostics() noexcept;

void report_error(std::string_view message);
void report_warning(std::string_view message);
void report_note(std::string_view message);
// A filter made because it was missing: said even under -q, since a quiet run that meets a
// vanished filter (a lost key, an evicted window) must not start over on an empty one unseen.
void report_created(std::string_view message);
// Where the Redis server came from when no URI was given ($REDIS_URL or the default), so that a
// failed connection names it; error_with_origin() adds it to a connection error's message.
void note_implicit_server();
[[nodiscard]] std::string error_with_origin(std::string_view message);
// A line that is already JSON (the summary) or text, printed as it is.
void report_line(std::string_view line);

}  // namespace redbloom::cli
