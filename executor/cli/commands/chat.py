"""`executor chat`: a conversation with the executor in the terminal.

prompt_toolkit gives line editing and a history kept under EXECUTOR_HOME;
Ctrl-C cancels the running turn (or clears the line) and returns to the
prompt; Ctrl-D or /exit quits; answers are rendered as Markdown by rich.
Slash commands are entries of SLASH_COMMANDS: adding one is adding an entry.
"""

from __future__ import annotations

import signal
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from executor.cli.commands.common import KbOpt, SessionOpt, console, err_console, session_or_new, warn_damaged_graph
from executor.cli.commands.turns import LiveTrace, Turns, summary_lines
from executor.core.errors import ExecutorError, describe, printable, terminal_safe

if TYPE_CHECKING:
    from rich.live import Live

    from executor.agent.session import TurnResult

PROMPT = "you> "


@dataclass
class Chat:
    """What the slash commands may read and change."""

    turns: Turns
    session: str
    kb: str
    show_trace: bool = True
    last_result: object | None = None  # the last answered turn (a TurnResult), e.g. for feedback on it
    done: bool = False
    cancelled_turn: _Running | None = None  # a turn cancelled with Ctrl-C that may not have stopped yet
    failed_turns: int = 0  # turns that ended in an error: the chat exits non-zero at the end if any did

    def say(self, text: str) -> None:
        console.print(terminal_safe(text), style="dim", highlight=False, markup=False)


def _new(chat: Chat, arg: str) -> None:
    chat.session, chat.last_result = f"chat-{uuid.uuid4().hex[:12]}", None
    chat.say(f"new session {chat.session}: nothing retrieved yet")


def _kb(chat: Chat, arg: str) -> None:
    if not arg:
        chat.say(f"knowledge base: {chat.kb} (known: {', '.join(chat.turns.rt.catalog.names())}); /kb NAME switches")
        return
    chat.turns.check_kb(arg)
    chat.kb = arg
    chat.say(f"knowledge base {arg} from the next question on (same session)")


def _trace(chat: Chat, arg: str) -> None:
    """`/trace on` shows, `/trace off` hides, `/trace` alone toggles: the word was ignored, and `/trace on` hid a
    trace already shown (hostile23 finding 7)."""
    wanted = {"": not chat.show_trace, "on": True, "off": False}.get(arg.lower())
    if wanted is None:
        chat.say(f"/trace takes on, off or nothing (to toggle), not {arg[:40]!r}")
        return
    chat.show_trace = wanted
    chat.say("tool calls shown" if chat.show_trace else "tool calls hidden (/trace on shows them again)")


def _exit(chat: Chat, arg: str) -> None:
    chat.done = True


def _feedback(verdict: str) -> Callable[[Chat, str], None]:
    def record(chat: Chat, arg: str) -> None:
        row = chat.turns.rt.feedback.record(chat.session, "last", verdict, note=arg or None)
        chat.say(f"recorded {row.verdict} for turn {row.turn} of {row.session_id}: {row.query}")

    return record


def _help(chat: Chat, arg: str) -> None:
    for name, (usage, _) in SLASH_COMMANDS.items():
        chat.say(f"{name:<8} {usage}")
    chat.say("Ctrl-C cancels a running answer, Ctrl-D quits; Up/Down browse earlier questions")


# name -> (help, handler(chat, argument)); a new slash command is one entry
SLASH_COMMANDS: dict[str, tuple[str, Callable[[Chat, str], None]]] = {
    "/new": ("start a fresh session (the knowledge base stays)", _new),
    "/kb": ("/kb NAME: ask another knowledge base; /kb alone lists them", _kb),
    "/trace": ("/trace on|off: show or hide the tool calls under each question; alone, toggles", _trace),
    "/good": ("the last answer was good (kept for calibration, as `executor feedback`)", _feedback("good")),
    "/bad": ("/bad [note]: the last answer was bad, optionally why", _feedback("bad")),
    "/help": ("this list", _help),
    "/exit": ("quit (so does Ctrl-D)", _exit),
}


def slash(chat: Chat, line: str) -> None:
    name, _, arg = line.partition(" ")
    entry = SLASH_COMMANDS.get(name.lower())
    if entry is None:
        chat.say(f"unknown command {name}; /help lists them")
        return
    entry[1](chat, arg.strip())


def _reader(home):
    """prompt_toolkit on a terminal (editing, history under EXECUTOR_HOME); plain lines from a pipe."""
    if not sys.stdin.isatty():

        def read_line() -> str:
            console.print(PROMPT, end="", highlight=False, markup=False)
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line

        return read_line
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    history = home / "chat_history"
    history.touch(mode=0o600, exist_ok=True)
    from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
    from prompt_toolkit.keys import Keys

    session = PromptSession(history=FileHistory(str(history)))

    def read_line() -> str:
        line = session.prompt(PROMPT)
        # a Ctrl-C typed just after Enter, while the prompt still read keys, is a key kept for the next prompt,
        # not a signal: it is the user cancelling this question, as it would be a moment later
        ahead = get_typeahead(session.input)
        if any(press.key == Keys.ControlC for press in ahead):
            raise QuestionCancelled
        store_typeahead(session.input, ahead)
        return line

    return read_line


def _markdown(text: str):
    """rich's Markdown, imported when a chat shows an answer: markdown-it and pygments cost every other
    command ~40 ms of its start-up (the CLI imports this module to register `chat`)."""
    from rich.markdown import Markdown

    return Markdown(text)


class _Answer:
    """Shows a turn: a status line until something happens, tool calls as they settle, and the answer as
    Markdown (re-rendered live while an LLM streams it)."""

    def __init__(self, chat: Chat):
        self.chat = chat
        self.text = ""
        self.status = console.status("thinking…", spinner="dots")
        self.live: Live | None = None

    def __enter__(self) -> _Answer:
        self.status.start()
        return self

    def trace(self, line: str) -> None:
        if self.chat.show_trace:
            console.print(terminal_safe(line), style="dim", highlight=False, markup=False)

    def token(self, text: str) -> None:
        if self.live is None:
            self.status.stop()
            from rich.live import Live

            self.live = Live(_markdown(""), console=console, refresh_per_second=8, vertical_overflow="visible")
            self.live.start()
        self.text += text
        self.live.update(_markdown(terminal_safe(self.text)))

    def finish(self, answer: str) -> None:
        self.status.stop()
        if self.live is not None:
            self.live.update(_markdown(terminal_safe(answer)))
        else:
            console.print(_markdown(terminal_safe(answer)))

    def __exit__(self, *exc) -> None:
        self.status.stop()
        if self.live is not None:
            self.live.stop()


def chat(session: SessionOpt = None, kb: KbOpt = "sample"):
    """Chat with the executor: tool calls show as they happen, answers as Markdown; /help lists the commands."""
    # Ctrl-C cancels an answer, so it must raise here even when the chat was started from something that
    # ignores SIGINT (a job started with `&` by a script inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with console.status("starting: loading the embedder and opening the knowledge base…", spinner="dots"):
        turns = Turns("chat")
        try:
            turns.warm_up(kb)
        except BaseException:
            turns.close()
            raise
    state = Chat(turns=turns, session=session_or_new(session, "chat"), kb=kb)
    with turns:
        state.say(
            f"session {state.session} · {turns.mode} mode · knowledge base {kb} · "
            "/help for commands, Ctrl-C cancels an answer, Ctrl-D quits"
        )
        read_line = _reader(turns.rt.settings.home)
        while not state.done:
            try:
                line = read_line().strip()
            except QuestionCancelled:
                state.say("cancelled; ask again or ask something else")
                continue
            except KeyboardInterrupt:  # at the prompt: drop the line, as a shell does
                continue
            except EOFError:
                break
            if not line:
                continue
            try:
                if line.startswith("/"):
                    _settle_cancelled(state)
                    slash(state, line)
                else:
                    _one_turn(state, line)
            except KeyboardInterrupt:  # while waiting for a cancelled turn to stop: back to the prompt
                continue
            except Exception as exc:  # one line, and the chat goes on
                _error(exc)
    console.print("bye", style="dim")
    if state.failed_turns:  # a turn that failed is not a chat that went well
        raise ExecutorError(f"{state.failed_turns} turn(s) of session {state.session} failed (see the errors above)")


class QuestionCancelled(Exception):
    """Ctrl-C came with the question's Enter: the question is dropped before its turn starts."""


class TurnCancelled(Exception):
    """Raised inside a cancelled turn at its next step, so the graph stops between steps."""


class _Running:
    """A turn in a worker thread, so Ctrl-C reaches the chat at once even while a model call blocks.

    A cancelled turn stops at its next step boundary (its callbacks raise); the thread is joined, and the
    session's open tool calls closed, before the next question, so two turns never write one session."""

    def __init__(self, state: Chat, question: str, shown: _Answer):
        self.cancelled = threading.Event()
        # not Thread.is_alive(): on Python 3.11 a join() interrupted by Ctrl-C can make it report a running
        # thread as finished
        self.done = threading.Event()
        self.session = state.session
        self.result: TurnResult | None = None
        self.error: BaseException | None = None

        def unless_cancelled(fn):
            def call(*args):
                if self.cancelled.is_set():
                    raise TurnCancelled
                fn(*args)

            return call

        def work():
            try:
                self.result = state.turns.run(
                    question,
                    state.session,
                    state.kb,
                    on_update=unless_cancelled(LiveTrace(shown.trace)),
                    on_token=unless_cancelled(shown.token),
                )
            except BaseException as exc:  # handed to the chat's thread
                self.error = exc
            finally:
                self.done.set()

        self.thread = threading.Thread(target=work, name="chat-turn", daemon=True)
        self.thread.start()

    def wait(self) -> None:
        while not self.done.wait(0.1):
            pass


def _settle_cancelled(state: Chat) -> None:
    """Let a cancelled turn reach its step boundary, then close what it left open."""
    running = state.cancelled_turn
    if running is None:
        return
    if not running.done.is_set():
        with console.status("letting the cancelled turn stop (Ctrl-C to keep waiting later)…", spinner="dots"):
            running.wait()
    state.cancelled_turn = None
    state.turns.cancel(running.session)


def _one_turn(state: Chat, question: str) -> None:
    _settle_cancelled(state)
    # Ctrl-C waits while the status line and the worker start: raised inside either, it left a spinner running
    # over the next prompt, or a turn that nobody waits for and that the next question's turn would share the
    # session with. It is raised, and cancels the turn, as soon as the turn is waited on.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        _shown_turn(state, question)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _shown_turn(state: Chat, question: str) -> None:
    with _Answer(state) as shown:
        running = _Running(state, question, shown)  # (its thread inherits the mask: SIGINT stays the chat's)
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C pressed meanwhile is raised here
            running.wait()
        except KeyboardInterrupt:
            running.cancelled.set()
            state.cancelled_turn = running
            shown.status.stop()
            state.say("cancelled; ask again or ask something else")
            return
        if running.error is not None:
            state.failed_turns += 1
            _error(running.error)  # one line, and the chat goes on
            return
        result = running.result
        assert result is not None  # the turn ended, neither cancelled nor failed
        shown.finish(result.answer)
    state.last_result = result
    warn_damaged_graph(e.get("graph_damaged") for e in result.trace)
    for line in summary_lines(result):
        state.say(line)


def _error(exc: BaseException) -> None:
    # one line, never wrapped at the terminal's width: a script (and the user's grep) reads it as the command's
    # own final error line is read
    err_console.print(f"error: {printable(describe(exc)[0])}", highlight=False, markup=False, soft_wrap=True)
