"""The `executor` command line, and the one error boundary every command runs inside.

Exit codes (also in the README and in `executor -h`):
  0  done
  1  the command ran and failed: a backend down or locked, an LLM endpoint unreachable, a failed eval
  2  it was asked wrongly: an unknown option, a missing argument, input the command rejects, a bad setting
 130 interrupted (Ctrl-C); 143 `executor ingest` stopped by SIGTERM (another command, or an ingest still
     loading its modules, ends at once and silently, as any program SIGTERM ends: the shell reports 143)

Whatever a command raises becomes one line on stderr (`error: ...`), and under
`--json` also `{"error": ..., "code": ...}` on stdout; `executor --debug ...`
(or EXECUTOR_DEBUG=1) adds the traceback. Commands added to `app` inherit this.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Annotated, NoReturn

from executor.core import fs

# first, before a module opens a file on the lowest free descriptor: one the caller closed (`2>&-`)
fs.standard_streams()
# gRPC's C core (pymilvus's transport) logs to stderr on its own, below our one-line errors: a Ctrl-C racing its
# poller printed "E1203 ... epoll_wait error: Bad file descriptor" before "error: interrupted". Its failures reach
# us as exceptions anyway; GRPC_VERBOSITY set by hand (to debug) still wins
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
# Ctrl-C while the modules below load (about 2 s) stops the command as it does later: one line, exit 130, no
# traceback out of importlib; also in a command a script started with `&` (which inherits SIGINT ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    import typer
    from typer.core import TyperGroup

    from executor.cli.commands import (
        chat,
        evaluation,
        feedback,
        graph,
        kb,
        knowledge,
        llm,
        mcp,
        repeats,
        retrieval_quality,
        turns,
    )
    from executor.cli.commands.common import sub_app
    from executor.core.errors import (
        EXIT_USAGE,
        ConfigError,
        ExecutorError,
        InputError,
        OutputError,
        describe,
        printable,
        redact,
        terminal_safe,
    )
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted\n")
    raise SystemExit(130) from None


def _before_dashdash(argv: list[str]) -> list[str]:
    return argv[: argv.index("--")] if "--" in argv else argv


def report(exc: BaseException, argv: list[str]) -> int:
    # `executor` or `executor graph` alone: the help, as asked
    format_message = getattr(exc, "format_message", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and callable(format_message):
        sys.stdout.write(str(format_message()) + "\n")
        return EXIT_USAGE
    message, code = describe(exc)
    flags = _before_dashdash(argv)
    if debugging(argv):  # what users paste into bug reports: redacted like every other line, its escapes shown
        sys.stderr.write(terminal_safe(redact("".join(traceback.format_exception(exc)))))
    line = printable(redact(message))  # click echoes option values, which may hold a secret
    if "--json" in flags and not isinstance(exc, OutputError):  # stdout is what failed: no JSON can reach it
        try:
            sys.stdout.write(json.dumps({"error": line, "code": code}, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        except (OSError, OutputError, ValueError):  # stdout failed on this line: stderr's is all that can be said
            pass
    sys.stderr.write(f"error: {line}\n")
    sys.stderr.flush()
    return code


DEBUG_VALUES = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False, "": False}


def debugging(argv: list[str]) -> bool:
    return "--debug" in _before_dashdash(argv) or DEBUG_VALUES.get(os.environ.get("EXECUTOR_DEBUG", "").lower(), False)


def check_arguments(argv: list[str]) -> None:
    """What the command line itself must hold before any command reads it (exit 2 otherwise)."""
    for i, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:  # bytes that are not UTF-8 reach Python as lone surrogates
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise InputError(f"argument {i} is not valid UTF-8 text: {printable(shown)}") from exc
    value = os.environ.get("EXECUTOR_DEBUG", "")
    if value.lower() not in DEBUG_VALUES:
        raise ConfigError(
            f"invalid setting EXECUTOR_DEBUG: use 1/true/yes or 0/false/no, not {printable(value)[:40]!r}"
        )


class ExecutorGroup(TyperGroup):
    """Runs the commands with click's own exception handling off, so that `report` sees every failure."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        argv = list(sys.argv[1:] if args is None else args)
        # Ctrl-C stops every command, also one started with `&` by a script (which inherits SIGINT ignored)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            if 1 in fs.closed_at_start:  # what a command prints would be lost: nobody would know it ran
                raise ExecutorError("stdout is closed: give the command somewhere to write (`>/dev/null` to discard)")
            check_arguments(argv)
            # shell completion and click's EPIPE handling end in SystemExit, which passes through untouched
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except Exception as exc:
            code = report(exc, argv)
        except KeyboardInterrupt as exc:
            code = report(exc, argv)
        if standalone_mode:
            leave(code)
        return code

    def invoke(self, ctx):
        # Typer turns a KeyboardInterrupt into a silent exit 130; `report` says "interrupted" instead
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise typer.Abort() from exc


def leave(code: int) -> NoReturn:
    """End the program now, without tearing the interpreter down: unloading its ~2,000 modules (gRPC, pymilvus,
    numpy, jieba's dictionary, ...) takes 0.3-0.5 s after the work is done (measured: `import pymilvus` alone
    costs 0.16 s at exit). What must happen at exit still does, in the same order as a normal exit: the atexit
    handlers (logging's flush among them), the output flushed, and Milvus Lite's server released (its manager
    does that in a finalizer, waiting for the server to exit, so the next command finds the file free)."""
    import atexit

    atexit._run_exitfuncs()
    lite = sys.modules.get("milvus_lite.server_manager")
    if lite is not None:
        lite.server_manager_instance.release_all()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OutputError as exc:  # the output was lost: the command did not do what it was asked
            code = code or report(exc, [])
        except (OSError, ValueError):  # a closed pipe: nothing more can reach the reader
            pass
    os._exit(code)


app = sub_app(
    cls=ExecutorGroup,
    help="Answers from team knowledge bases, without the retrieval loop.\n\n"
    "Exit codes: 0 done; 1 the command ran and failed (a backend down, a failed eval); "
    "2 it was asked wrongly (bad option, argument, input or setting); 130 interrupted; 143 an ingest SIGTERM stopped.",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"executor {version('executor')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="print the traceback of an error (also EXECUTOR_DEBUG=1)")
    ] = False,
):
    # --debug is read by `report` from the command line itself: it must work for errors raised while parsing
    pass


app.command()(knowledge.ingest)
app.command()(knowledge.lookup)
app.command()(turns.ask)
app.command()(chat.chat)
app.command("eval")(evaluation.eval_)
app.command()(kb.kg)
app.command()(evaluation.stats)
app.command()(retrieval_quality.calibrate)
app.command("eval-retrieval")(retrieval_quality.eval_retrieval)
app.command("calibrate-repeats")(repeats.calibrate_repeats)
app.command()(feedback.feedback)
app.command()(mcp.mcp)
app.add_typer(knowledge.session_app, name="session")
app.add_typer(graph.graph_app, name="graph")
app.add_typer(kb.kb_app, name="kb")
app.add_typer(llm.llm_app, name="llm")

if __name__ == "__main__":  # pragma: no cover  (`python -m executor.cli.main` is the same program as `executor`)
    app(prog_name="executor")
