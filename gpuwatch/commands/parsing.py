"""How the subcommands are declared: help screens with examples, options declared only
for the subcommand in use, and run functions imported only when they run.

``gpuwatch --version`` and ``gpuwatch --help`` build the whole parser, so building it
must cost next to nothing: the top level knows each subcommand by its name, its
one-line summary and where its options are declared (``"module:function"``). A
subcommand's options (and what their help texts need, such as the model catalog) are
declared when that subcommand is parsed or its help shown; its run function is a
``"module:function"`` too, imported at dispatch.
"""

from __future__ import annotations

import argparse
import importlib
import textwrap
from collections.abc import Callable, Sequence

TYPE_CHECKING = False      # not typing's: importing typing would cost every start-up ~3 ms
if TYPE_CHECKING:
    from typing import Any

# Put in a help text where the sessions folder should appear; it is looked up only when
# that help is shown (finding it imports the sessions package).
SESSIONS_DIR = "{sessions_dir}"

Run = Callable[[argparse.Namespace], int]


def load(target: str) -> Any:
    """The object that ``"package.module:name"`` names, importing its module."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs: prose paragraphs are wrapped to the terminal; a
    paragraph with indented lines (the examples) is kept exactly as written. Option help
    wraps as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for para in text.strip("\n").split("\n\n"):
            lines = para.splitlines()
            if any(line[:1].isspace() for line in lines):
                paragraphs.append("\n".join(indent + line for line in lines))
            else:
                paragraphs.append(textwrap.fill(" ".join(lines), width, initial_indent=indent,
                                                 subsequent_indent=indent))
        return "\n\n".join(paragraphs)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            # argparse sizes the name column before indenting the subcommands under
            # COMMAND, so a long name ("scenarios") would push its summary to a new line
            longest = max((len(name) for name in action.choices), default=0)
            self._action_max_length = max(self._action_max_length, longest
                                          + self._current_indent + self._indent_increment)

    def _format_text(self, text: str) -> str:
        return super()._format_text(_fill_in(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _fill_in(super()._expand_help(action))


def _fill_in(text: str) -> str:
    if SESSIONS_DIR not in text:
        return text
    from gpuwatch.sessions.paths import sessions_dir

    return text.replace(SESSIONS_DIR, str(sessions_dir()))


class LazyParser(argparse.ArgumentParser):
    """A subcommand's parser whose options are declared the first time it parses or
    shows help: ``declare`` is ``"module:function"``, called with the parser."""

    def __init__(self, *args: Any, declare: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._declare = declare

    def declared(self) -> LazyParser:
        """This parser with its options declared."""
        declare, self._declare = self._declare, None
        if declare is not None:
            load(declare)(self)
        return self

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.declared()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.declared()
        return super().format_usage()

    def format_help(self) -> str:
        self.declared()
        return super().format_help()


def examples(*lines: str) -> str:
    """An epilog of command lines, one per line, shown as written."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def later(target: str) -> Run:
    """A run function that imports ``"package.module:function"`` when it is first called."""
    _, _, name = target.partition(":")

    def run(args: argparse.Namespace) -> int:
        return load(target)(args)

    run.__qualname__ = run.__name__ = name
    run.__doc__ = f"Runs {target}, imported when called."
    return run


def describe(parser: argparse.ArgumentParser, *, description: str,
             example_lines: Sequence[str], run: str) -> None:
    """Give a subcommand's parser its ``description``, its examples (the epilog of its
    help) and ``run``, the ``"module:function"`` imported and called when it runs."""
    parser.description = description
    parser.epilog = examples(*example_lines)
    parser.formatter_class = HelpFormatter
    parser.set_defaults(func=later(run))
