# The krew zipapp's __main__.py (release/build.py puts it in place of shiv's own). It is the
# first code any python3 runs from the plugin, so it is written in the syntax every Python since
# 2.7 can read: an interpreter too old for the plugin gets one line naming the need and exit 10
# (errors.Exit.CONFIG: the environment cannot run the plugin), not a SyntaxError traceback from
# a dependency. `make lint` checks this file with vermin for Python 2.7 and 3.0.
import sys

NEEDED = (3, 9)
EXIT_PYTHON_TOO_OLD = 10

if sys.version_info[:2] < NEEDED:
    sys.stderr.write(
        "error: kubectl-nodefail needs Python %d.%d or newer; %s is Python %d.%d.%d "
        "(install a newer one and put it first on PATH as python3)\n"
        % (
            NEEDED[0],
            NEEDED[1],
            sys.executable or "python3",
            sys.version_info[0],
            sys.version_info[1],
            sys.version_info[2],
        )
    )
    sys.exit(EXIT_PYTHON_TOO_OLD)

import _bootstrap  # noqa: E402  (shiv's bootstrap: unpacks once into ~/.shiv, then runs the CLI)

_bootstrap.bootstrap()
