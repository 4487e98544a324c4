"""The ``tritium`` command: ``run`` a Triton script on tritium, show a kernel's ``ir``, ``demo``."""
from __future__ import annotations

import argparse
import os
import runpy
import sys


def _run(args) -> int:
    """``tritium run script.py args`` / ``tritium run -m module args``, like ``python``, with
    ``import triton`` resolving to tritium."""
    import importlib.util

    from . import compat

    compat.install()
    # Child pytest processes (pytest-xdist workers) load this plugin, which installs the same redirect.
    plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p]
    if "tritium.pytest_plugin" not in plugins:
        os.environ["PYTEST_PLUGINS"] = ",".join(plugins + ["tritium.pytest_plugin"])
    if args.module:
        # As ``python -m``: the current directory comes first on the path, and argv[0] becomes the
        # module's file (runpy sets it).
        sys.path.insert(0, os.getcwd())
        try:
            found = importlib.util.find_spec(args.target)
        except (ImportError, ValueError) as e:
            found, reason = None, str(e)
        else:
            reason = f"No module named {args.target}"
        if found is None:
            print(f"tritium run: {reason}", file=sys.stderr)
            return 1
        sys.argv = [args.target] + args.args
        return _as_python_would(lambda: runpy.run_module(args.target, run_name="__main__", alter_sys=True))
    if not os.path.exists(args.target):
        print(f"tritium run: can't open file {args.target!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = [args.target] + args.args
    return _as_python_would(lambda: _run_script(os.path.abspath(args.target)))


def _as_python_would(run) -> int:
    """Runs the user's code; an exception it does not catch is printed as ``python`` prints it,
    the traceback starting at the user's code (this command's and runpy's frames left out), and
    the exit status is 1. ``SystemExit`` and ``KeyboardInterrupt`` pass through unchanged."""
    try:
        run()
    except Exception as error:  # noqa: BLE001 - printed as python prints what a script does not catch
        ours = {os.path.abspath(__file__), os.path.abspath(runpy.__file__), "<frozen runpy>"}
        tb = error.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename in ours
                                  or os.path.abspath(tb.tb_frame.f_code.co_filename) in ours):
            tb = tb.tb_next
        sys.excepthook(type(error), error.with_traceback(tb), tb)
        return 1
    return 0


def _run_script(script: str) -> None:
    """Runs ``script`` as ``python script.py`` does: as ``__main__``, with an absolute ``__file__``
    (Python's since 3.9), its folder first on ``sys.path``, and ``sys.argv[0]`` as the user typed it
    (``runpy.run_path`` would make that absolute too)."""
    import builtins
    import types

    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=script, __cached__=None, __builtins__=builtins)
    sys.modules["__main__"] = main
    sys.path.insert(0, os.path.dirname(script))
    exec(code, main.__dict__)  # noqa: S102 - the user's script, as python runs it


def _parse_constant(text: str):
    name, _, value = text.partition("=")
    for convert in (int, float):
        try:
            return name, convert(value)
        except ValueError:
            pass
    if value in ("True", "False"):
        return name, value == "True"
    return name, value


def _ir(args) -> int:
    from . import compat
    compat.install()
    path, _, kernel_name = args.target.rpartition(":")
    if not path or not kernel_name:
        print("usage: tritium ir SCRIPT.py:KERNEL --signature '*fp32,*fp32,i32' -D BLOCK=1024 [--stage NAME]",
              file=sys.stderr)
        return 2
    namespace = runpy.run_path(path, run_name="__tritium_ir__")
    kernel = namespace.get(kernel_name)
    if kernel is None:
        print(f"{path} defines no kernel named {kernel_name!r}", file=sys.stderr)
        return 2
    constants = dict(_parse_constant(c) for c in args.define)
    if args.stage is None:
        print(kernel.ir(args.signature, **constants))
        return 0
    stages = kernel.stages(args.signature, **constants)
    if args.stage not in stages:
        print(f"the backend has no stage {args.stage!r}; its stages are {', '.join(stages)}", file=sys.stderr)
        return 2
    output = stages[args.stage]
    if isinstance(output, str):
        print(output)
    else:
        sys.stdout.buffer.write(output)
    return 0


def _demo(args) -> int:
    from .demo import main

    return main()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tritium", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an unmodified Triton script (import triton resolves to tritium)")
    run.add_argument("-m", dest="module", action="store_true",
                     help="run a library module as a script, like python -m (tritium run -m pytest tests/)")
    run.add_argument("target", help="a script, or with -m a module name")
    run.add_argument("args", nargs=argparse.REMAINDER)
    run.set_defaults(handler=_run)
    ir = sub.add_parser("ir", help="print a kernel's tile IR for given argument types")
    ir.add_argument("target", help="SCRIPT.py:KERNEL")
    ir.add_argument("--signature", "-s", required=True,
                    help="types of the run-time parameters in order, e.g. '*fp32,*fp32,i32'; ':16' marks a "
                         "16-byte aligned pointer or an integer divisible by 16, ':1' an integer equal to 1 "
                         "('*fp32:16,*fp32:16,i32:16')")
    ir.add_argument("--stage", default=None,
                    help="print this backend stage's output instead of the IR (the interpreter's: ttir)")
    ir.add_argument("-D", dest="define", action="append", default=[], help="a constexpr, NAME=VALUE")
    ir.set_defaults(handler=_ir)
    demo = sub.add_parser("demo", help="run real kernels and compare them with torch")
    demo.set_defaults(handler=_demo)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
