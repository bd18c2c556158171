#include "json_line_scan.hpp"

#include <cstring>

namespace redbloom {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Whether a member name (its bytes, no escapes) is the path's segment; names are short.
bool same_name(const char* name, std::size_t size, const std::string& segment) {
  if (size != segment.size()) return false;
  for (std::size_t i = 0; i < size; ++i) {
    if (name[i] != segment[i]) return false;
  }
  return true;
}

// The deepest container the scan follows; deeper records go to the parser.
constexpr std::uint32_t kMaxDepth = 63;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string token [p, e) (the string, then blanks) that holds `next`, the run's next backslash:
// true if each escape in it is one the parser decodes whatever follows (\" \\ \/ \b \f \n \r \t,
// \u and four hex digits outside the surrogates), and then `next` moves past the string.
bool plain_escapes(const char* p, const char* e, const char*& next, const char* run_end) {
  while (e > p && is_blank(e[-1])) --e;
  const char* const end = e - 1;  // the closing quote
  if (next < p || e - p < 2 || *end != '"') return false;
  for (const char* b = next; b != nullptr && b < end;) {
    switch (b[1]) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        b += 2;
        break;
      case 'u': {
        if (end - b < 6) return false;
        int value = 0;
        for (int i = 2; i < 6; ++i) {
          const int digit = hex_value(b[i]);
          if (digit < 0) return false;
          value = value * 16 + digit;
        }
        if (value >= 0xd800 && value <= 0xdfff) return false;  // pairs are the parser's
        b += 6;
        break;
      }
      default:
        return false;
    }
    if (b >= end) break;
    b = static_cast<const char*>(std::memchr(b, '\\', static_cast<std::size_t>(end - b)));
  }
  next = static_cast<const char*>(std::memchr(e, '\\', static_cast<std::size_t>(run_end - e)));
  if (next == nullptr) next = run_end;
  return true;
}

// The state of a run's scan between records.
struct RunScan {
  const char* base;
  const std::uint32_t* ix;
  std::uint32_t n;
  std::uint32_t t;             // the next token: the record's first
  const char* next_backslash;  // the run's next backslash, or its end
  const char* run_end;
};

// One record, whose first token '{' has been read, up to the end of its line. kEscapes: the
// record holds a backslash (in a string, or it is not JSON): each string is checked for one.
template <bool kEscapes>
bool scan_record(RunScan& scan, std::size_t line_end, const std::vector<std::string>& path,
                 RecordKeyStatus& status_out, JsonLineKey& key_out) {
  // long: one state machine over the tokens, its states code positions (as in simdjson's own
  // second stage), so that each token costs one well-predicted test.
  const char* const base = scan.base;
  const std::uint32_t* const ix = scan.ix;
  const std::uint32_t n = scan.n;
  const std::size_t segments = path.size();
  std::uint32_t t = scan.t;
  std::uint64_t arrays = 0;  // bit d: the container at depth d is an array
  std::uint32_t depth = 1;
  std::uint32_t on = 1;  // the depth of the deepest open object that the path reaches
  bool matched = false;  // that object's member of the path has been read
  int role = 0;          // the value about to be read: 0 none, 1 a step of the path, 2 the key
  RecordKeyStatus status = RecordKeyStatus::missing;
  JsonLineKey key;
  char c = 0;
  const char* p = nullptr;  // the token
  const char* e = nullptr;  // where the next token starts
// The next token, or false at the end of the run.
#define REDBLOOM_NEXT_TOKEN() \
  do {                        \
    if (t >= n) return false; \
    p = base + ix[t];         \
    e = base + ix[t + 1];     \
    c = *p;                   \
    ++t;                      \
  } while (false)
// A scalar token ends before the blanks that precede the next token.
#define REDBLOOM_TRIM_TOKEN()                       \
  do {                                              \
    if (static_cast<unsigned char>(e[-1]) <= ' ') { \
      while (e > p && is_blank(e[-1])) --e;         \
    }                                               \
  } while (false)
object_field:
  REDBLOOM_NEXT_TOKEN();
  if (c == '}') goto scope_end;
object_key:
  // Stage 1 has closed every string (a quote inside one is escaped): a string's token is the
  // string and the blanks after it, its bytes checked only where they are read.
  if (c != '"') return false;
  role = 0;
  if (kEscapes && scan.next_backslash < e) {
    if (on == depth && !matched && depth <= segments) return false;
    if (!plain_escapes(p, e, scan.next_backslash, scan.run_end)) return false;
  } else if (on == depth && !matched && depth <= segments) {
    REDBLOOM_TRIM_TOKEN();
    if (e - p < 2 || e[-1] != '"') return false;
    if (same_name(p + 1, static_cast<std::size_t>(e - p - 2), path[depth - 1])) {
      matched = true;
      role = depth == segments ? 2 : 1;
    }
  }
  REDBLOOM_NEXT_TOKEN();
  if (c != ':') return false;
  REDBLOOM_NEXT_TOKEN();
  goto value;
object_continue:
  REDBLOOM_NEXT_TOKEN();
  if (c == ',') {
    REDBLOOM_NEXT_TOKEN();
    goto object_key;
  }
  if (c != '}') return false;
  goto scope_end;
array_element:
  REDBLOOM_NEXT_TOKEN();
  if (c == ']') goto scope_end;
  goto value;
array_continue:
  REDBLOOM_NEXT_TOKEN();
  if (c == ',') {
    REDBLOOM_NEXT_TOKEN();
    goto value;
  }
  if (c != ']') return false;
  goto scope_end;
value:
  if (c == '"') {  // the most frequent value first
    if (kEscapes && scan.next_backslash < e) {
      if (role == 2 || !plain_escapes(p, e, scan.next_backslash, scan.run_end)) return false;
    } else if (role == 2) {
      REDBLOOM_TRIM_TOKEN();
      if (e - p < 2 || e[-1] != '"') return false;
      status = RecordKeyStatus::ok;
      key = {'s', std::string_view(p + 1, static_cast<std::size_t>(e - p - 2))};
    }
    goto value_end;
  }
  switch (c) {
    case '{':
      if (depth == kMaxDepth) return false;
      ++depth;
      arrays &= ~(std::uint64_t{1} << depth);
      if (role == 1) {
        on = depth;
        matched = false;
      } else if (role == 2) {
        status = RecordKeyStatus::invalid;  // an object is not a key
      }
      role = 0;
      goto object_field;
    case '[':
      if (depth == kMaxDepth) return false;
      ++depth;
      arrays |= std::uint64_t{1} << depth;
      if (role == 2) status = RecordKeyStatus::invalid;  // nor is an array
      role = 0;
      goto array_element;
    case 't':
    case 'f':
    case 'n': {
      REDBLOOM_TRIM_TOKEN();
      const std::string_view atom(p, static_cast<std::size_t>(e - p));
      if (atom != "true" && atom != "false" && atom != "null") return false;
      if (role == 2 && c != 'n') {  // null is no key: missing
        status = RecordKeyStatus::ok;
        key = {'b', atom};
      }
      break;
    }
    default: {
      // An integer: -?(0|[1-9][0-9]*), at most 18 digits (always an int64); any other
      // number goes to the parser.
      REDBLOOM_TRIM_TOKEN();
      const char* digits = p + (c == '-' ? 1 : 0);
      if (digits == e || e - digits > 18 || (*digits == '0' && e - digits != 1)) return false;
      for (const char* d = digits; d < e; ++d) {
        if (*d < '0' || *d > '9') return false;
      }
      if (role == 2) {
        status = RecordKeyStatus::ok;
        key = {'n', std::string_view(p, static_cast<std::size_t>(e - p))};
      }
      break;
    }
  }
value_end:
  role = 0;
  if ((arrays >> depth) & 1) goto array_continue;
  goto object_continue;
scope_end:
  if (on == depth) {  // the path's object closes: its parent's member was the step to it
    --on;
    matched = true;
  }
  if (--depth == 0) goto record_end;
  if ((arrays >> depth) & 1) goto array_continue;
  goto object_continue;
record_end:
  // The root object closes on the record's line, and nothing follows it there.
  if (p >= base + line_end - 1 || (t < n && ix[t] < line_end)) return false;
  scan.t = t;
  status_out = status;
  key_out = key;
  return true;
#undef REDBLOOM_NEXT_TOKEN
#undef REDBLOOM_TRIM_TOKEN
}

}  // namespace

bool scan_json_lines(const JsonLineRun& run, const std::vector<std::string>& path,
                     RecordKeyStatus* statuses, JsonLineKey* keys) {
  // Escapes are checked in the strings that hold one (the run's backslashes in turn); a name
  // on the path or a key with one is left to the parser: then those are their own bytes.
  const char* const run_end = run.base + run.starts[run.count];
  const char* next_backslash =
      static_cast<const char*>(std::memchr(run.base, '\\', run.starts[run.count]));
  RunScan scan{
      run.base, run.index, run.index_count, 0, next_backslash == nullptr ? run_end : next_backslash,
      run_end};
  for (std::size_t r = 0; r < run.count; ++r) {
    const std::size_t line_end = run.starts[r + 1];
    const std::uint32_t t = scan.t;
    if (t >= scan.n || scan.ix[t] < run.starts[r] || scan.ix[t] >= line_end ||
        run.base[scan.ix[t]] != '{') {
      return false;
    }
    ++scan.t;
    const bool ok = scan.next_backslash < run.base + line_end
                        ? scan_record<true>(scan, line_end, path, statuses[r], keys[r])
                        : scan_record<false>(scan, line_end, path, statuses[r], keys[r]);
    if (!ok) return false;
  }
  return true;
}

}  // namespace redbloom
