// The redbloom subcommands. Each register_* adds one to the app; its callback stores the
// process exit code (see exit_codes.hpp) in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace redbloom::cli {

void register_plan(CLI::App& app, int& exit_code);
void register_create(CLI::App& app, int& exit_code);
void register_add(CLI::App& app, int& exit_code);
void register_dedup(CLI::App& app, int& exit_code);
void register_exists(CLI::App& app, int& exit_code);
// remove and count: a cuckoo filter's.
void register_remove(CLI::App& app, int& exit_code);
void register_count(CLI::App& app, int& exit_code);
void register_info(CLI::App& app, int& exit_code);
void register_drop(CLI::App& app, int& exit_code);
void register_load(CLI::App& app, int& exit_code);
void register_diff(CLI::App& app, int& exit_code);
// export, import and copy.
void register_transfers(CLI::App& app, int& exit_code);
// dedup --from redis-stream://...: main.cpp sends `dedup` with --from to this hidden command.
inline constexpr const char* kRedisStreamDedupCommand = "dedup-stream";
void register_redis_stream_dedup(CLI::App& app, int& exit_code);
// dedup --from kafka://...: main.cpp sends `dedup` with a kafka:// --from to this hidden command.
inline constexpr const char* kKafkaDedupCommand = "dedup-kafka";
void register_kafka_dedup(CLI::App& app, int& exit_code);

}  // namespace redbloom::cli
