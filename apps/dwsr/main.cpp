// dwsr: the command-line tool. Thin: each subcommand parses its options and
// calls the library. User errors (dwsr::error, command-line misuse, a size too
// large to allocate) exit with status 2 and one line on stderr, escaped.

#include <CLI/CLI.hpp>

#include <exception>
#include <functional>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "dwsr/core/quote.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/error.hpp"

// Subcommands, one header each.
#include "calibrate_command.hpp"
#include "colocate_command.hpp"
#include "dataset_command.hpp"
#include "generate_command.hpp"
#include "leaderboard_command.hpp"
#include "ops_command.hpp"
#include "plan_command.hpp"
#include "replay_command.hpp"
#include "run_command.hpp"
#include "train_command.hpp"

namespace {

/// "dwsr <subcommand> --help" for the subcommand being parsed, or "dwsr --help".
std::string help_command(const CLI::App& app) {
  std::string out = "dwsr";
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) {
    cmd = cmd->get_subcommands().front();
    out += ' ';
    out += cmd->get_name();
  }
  return out + " --help";
}

/// Prints the one line of a failure (with what stale files were removed before
/// it, if any) and returns `code`.
int fail(const std::string& what, int code) {
  std::string line = "dwsr: " + what;
  if (const auto& notice = dwsr::cli::stale_notice(); !notice.empty()) line += " (before that: " + notice + ")";
  std::cerr << dwsr::printable(line) << std::endl;
  return code;
}

/// The one line for an allocation the system refused: every large allocation
/// of dwsr is sized by the user (a cube shape, a count), so this is a user
/// error, like dwsr::out_of_memory.
int out_of_memory() {
  return fail("out of memory: the system refused an allocation; a shape or count given may be too large", 2);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dwsr: exact memory simulation and native execution of seismic attributes"};
  app.require_subcommand(1);
  // The vector instruction set of the cloned kernels, as DWSR_SIMD leaves it
  // (an unknown value is reported below, before any command runs).
  std::string simd;
  try {
    simd = std::string(dwsr::name(dwsr::simd_isa_in_use()));
  } catch (const dwsr::error& e) {
    return fail(e.what(), 2);
  }
  app.set_version_flag("--version", "dwsr 0.1.0 (vector instructions: " + simd + ")");

  // Register subcommands (each header's add_*_command).
  dwsr::cli::add_generate_command(app);
  dwsr::cli::add_ops_command(app);
  dwsr::cli::add_run_command(app);
  dwsr::cli::add_plan_command(app);
  dwsr::cli::add_advise_command(app);
  dwsr::cli::add_demo_command(app);
  dwsr::cli::add_replay_command(app);
  dwsr::cli::add_calibrate_command(app);
  dwsr::cli::add_dataset_command(app);
  dwsr::cli::add_colocate_command(app);
  dwsr::cli::add_train_command(app);
  dwsr::cli::add_leaderboard_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; any other misuse is one line.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string what = e.what();
    if (app.get_subcommands().empty() && !app.remaining().empty()) {  // a mistyped command
      what = "unknown command " + dwsr::quote(app.remaining().front()) + "; the commands are:";
      const CLI::App& all = app;
      for (const auto* cmd : all.get_subcommands(std::function<bool(const CLI::App*)>{})) {
        what += what.back() == ':' ? " " : ", ";
        what += cmd->get_name();
      }
    }
    return fail(what + " (see " + help_command(app) + ")", 2);
  } catch (const dwsr::error& e) {
    return fail(e.what(), 2);
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  } catch (const std::length_error&) {  // a container asked for more than max_size(): a size from the user
    return out_of_memory();
  } catch (const std::exception& e) {
    return fail(std::string("internal error (please report it): ") + e.what(), 1);
  }
  if (const auto& notice = dwsr::cli::stale_notice(); !notice.empty())
    std::cerr << "dwsr: " << dwsr::printable(notice) << std::endl;
  return 0;
}
