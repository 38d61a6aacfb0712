"""A command as a terminal's foreground job runs it: with Ctrl-C (SIGINT) raising KeyboardInterrupt.

A suite started in the background by a script (`cmd &`, as CI may start it) has SIGINT ignored, and Python
keeps an inherited SIG_IGN (it installs its own handler only where the parent left the default): a child sent
SIGINT there would go on as if nothing came. The child's own Python restores the handler first, so a test of
Ctrl-C tests the program, not how the suite was started (no preexec_fn: the parent may hold threads)."""
import sys


def python_module(module: str, *args: str) -> list[str]:
    """argv for `python -m module args...` with SIGINT's default Python handler, whatever this process inherited."""
    return [sys.executable, "-c", "import runpy, signal, sys; "
            "signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"sys.argv[0] = {module!r}; runpy.run_module({module!r}, run_name='__main__')", *args]
