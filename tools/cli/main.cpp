// infera: the command-line entry point. Dispatches to the commands; no exception leaves main.
#include <exception>
#include <new>
#include <string>

#include "cli.h"

using namespace infera::cli;

static int dispatch(int argc, char** argv) {
  if (argc < 2) {  // like git: the overview, but exit 2, since nothing was done
    fputs(overview_text().c_str(), stdout);
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    fputs(overview_text().c_str(), stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    printf("infera %s\n", infera::version());
    return kExitOk;
  }
  if (cmd == "run") return cmd_run(argc, argv);
  if (cmd == "check") return cmd_check(argc, argv);
  if (cmd == "bench") return cmd_bench(argc, argv);
  if (cmd == "info") return cmd_info(argc, argv);
  if (cmd == "doctor") return cmd_doctor(argc, argv);
  if (cmd == "tune") return cmd_tune(argc, argv);
  if (cmd == "profile") return cmd_profile(argc, argv);
  if (cmd == "quantize") return cmd_quantize(argc, argv);
  if (cmd == "eval") return cmd_eval(argc, argv);
  if (cmd == "build") return cmd_build(argc, argv);
  if (!cmd.empty() && cmd[0] == '-') return usage("", "unknown option '" + cmd + "' before the command");
  return usage("", "unknown command '" + cmd +
                       "' (commands: run, bench, info, check, profile, tune, build, quantize, eval, "
                       "doctor)");
}

int main(int argc, char** argv) {
  // The library returns errors as values; this catches what the CLI's own code (or a library
  // bug) might still throw, so that every failure is one `infera: error:` line, never an abort.
  try {
    return dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return fail("internal error: unknown exception");
  }
}
