"""python -m infera ARGS: the bundled `infera` CLI (run, bench, info, check, doctor), same arguments,
output and exit codes."""
import os
import sys

from . import cli_path


def main():
    exe = cli_path()
    if not os.access(exe, os.X_OK):
        sys.stderr.write("infera: error: the bundled CLI is missing at %s (reinstall the package)\n" % exe)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, ["infera"] + sys.argv[1:])  # replaces this process: the CLI's exit code is ours
    return 1


if __name__ == "__main__":
    sys.exit(main())
