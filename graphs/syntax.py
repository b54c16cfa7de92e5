"""The command grammar, parsed by lark: what a line is (a control, `lang`, `pending`, a surface's own command, a
command and its arguments) and what an answer is (yes, no, an option's number). graphs/syntax.lark holds the
conversation's forms and the templates; the rule of each command of its own and of each workflow's subcommands is
generated here from its declaration in the registry (`COMMANDS`, each workflow's `subcommands`), so a new command
is one declaration and a new word one entry in its package's `Words`. The parser reads words, not characters:
graphs/grammar.py `read_words` (normalisation, dates, units, parameter names, segmentation of unspaced Chinese)
gives them, `_Lexer` types them."""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import LarkError
from lark.lexer import Lexer, LexerState
from lark.parsers.lalr_analysis import Shift

from graphs import registry  # a module, read at call time: the registry reads commands here (command_for)
from graphs.grammar import DATE, NO_WORDS, YES_WORDS, Word, argument, read_words, vocabulary
from graphs.workflow import Subcommand, Workflow

CONTROL_WORDS = ("help", "status", "quit", "exit", "cancel")  # syntax.lark `control`
CONVERSATION_WORDS = (*CONTROL_WORDS, "lang", "pending")
_NOT_A_NAME = re.compile(r"\W")


def terminal(keyword: str) -> str:
    """The terminal a keyword is read as: `rule` is K_RULE, `pre_open` K_PRE_OPEN."""
    return "K_" + _NOT_A_NAME.sub("_", keyword.upper())


@dataclass(frozen=True)
class _Line:
    """What the lexer reads: a line's words and the surface's own command words."""

    words: list[Word]
    local: Collection[str]


class _Lexer(Lexer):
    """One token per word, its value the word's place in the line; its type the first of what the word may be (a
    LOCAL command, its keyword's terminal, LEAD, YES, NO, NUMBER) that the parser accepts at that point, else WORD."""

    __future_interface__ = 2  # lex(lexer_state, parser_state): the parser's state, read for what it accepts

    def __init__(self, conf: Any) -> None:
        self.named = frozenset(_named())
        self.leads = frozenset(_leads())

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        line: _Line = lexer_state.text  # type: ignore[assignment]  # a custom input: lark hands it over as given
        for at, word in enumerate(line.words):
            kinds = self._kinds(at, word.read, line.local)
            yield Token(next((kind for kind in kinds if _accepts(parser_state, kind)), "WORD"), at)

    def _kinds(self, at: int, read: str, local: Collection[str]) -> list[str]:
        key = read.lower().lstrip("/")
        kinds = ["LOCAL"] if at == 0 and key in local else []
        if key in self.named:
            kinds.append(terminal(key))
        if key in self.leads:
            kinds.append("LEAD")
        if key in YES_WORDS:
            kinds.append("YES")
        elif key in NO_WORDS:
            kinds.append("NO")
        elif key.isascii() and key.isdigit():
            kinds.append("NUMBER")
        return kinds


def _accepts(parser_state: Any, kind: str) -> bool:
    """Whether the parser, in `parser_state`, can shift a `kind` token: its reductions first, on a copy of its state
    stack (lark's InteractiveParser.accepts, for one terminal and without building trees). The parse table's
    lookaheads alone over-accept: LALR merges states that differ only in what may follow."""
    states = parser_state.parse_conf.states
    stack = list(parser_state.state_stack)
    while (action := states[stack[-1]].get(kind)) is not None:
        step, rule = action
        if step is Shift:
            return True
        if rule.expansion:
            del stack[-len(rule.expansion):]
        stack.append(states[stack[-1]][rule.origin.name][1])
    return False


def _named() -> list[str]:
    """The keywords with a terminal of their own: the conversation's (`control`, `lang`, `pending`), the commands'
    and the workflows'."""
    return sorted({*CONVERSATION_WORDS, *registry.COMMANDS, *registry.WORKFLOWS})


def _leaders() -> frozenset[str]:
    """The keywords that name a command (a workflow or a command of its own; `cancel` is also the control)."""
    return frozenset(registry.WORKFLOWS) | (frozenset(registry.COMMANDS) - {"cancel"})


def _leads() -> list[str]:
    """The keywords read as LEAD, which may come before or after the command they go with: any English keyword a
    word is read as and any subcommand, but no command's name. A subcommand is resolved by its name from the
    registry (`_subcommand`), so the grammar does not grow with them."""
    subs = {sub for workflow in registry.WORKFLOWS.values() for sub in workflow.subcommands}
    words = {english.lower() for english in vocabulary().words.values()} | subs
    return sorted(words - _leaders())


def _command_rules() -> list[str]:
    """One rule per command of its own (`top__NAME`) and one per workflow with subcommands (`sub__WORKFLOW`),
    written in syntax.lark's templates; `lead`: LEAD and the conversation's words that are leads too (`help
    account` is `account help`)."""
    rules: list[str] = []
    for name in registry.COMMANDS:
        template = "_after" if name in CONTROL_WORDS else "_top"
        rules.append(f"top__{name}: {template}{{{terminal(name)}}}")
    for workflow in registry.WORKFLOWS.values():
        if workflow.subcommands:
            word = terminal(workflow.name)
            rules.append(f"sub__{workflow.name}: _noun{{{word}}} | _verb{{{word}}}")
    rules.append("command: " + " | ".join(rule.split(":")[0] for rule in rules))
    leads = set(_leads())
    rules.append("lead: " + " | ".join(["LEAD", *(terminal(w) for w in CONVERSATION_WORDS if w in leads)]))
    return rules


def grammar_text() -> str:
    """The whole grammar: syntax.lark, the commands' rules and `lead`, the terminals."""
    return "\n".join([
        Path(__file__).with_name("syntax.lark").read_text(encoding="utf-8"),
        *_command_rules(),
        "%declare " + " ".join([*(terminal(k) for k in _named()), "LEAD", "YES", "NO", "NUMBER", "WORD", "LOCAL"]),
    ])


@functools.cache
def parser() -> Lark:
    """The grammar's parser, built once a process at its first read: LALR(1) with the contextual lexer above. The
    collector waits while lark builds its tables: their thousands of small objects set off full collections over a
    heap that holds pandas and LangGraph (0.4-0.9 s instead of 0.1-0.2 s, measured in bench/conversation.py's first
    read)."""
    text = grammar_text()
    collecting = gc.isenabled()
    gc.disable()
    try:
        return Lark(text, parser="lalr", lexer=_Lexer, start=["start", "answer"])
    finally:
        if collecting:
            gc.enable()


@dataclass(frozen=True)
class Parsed:
    """A line as the grammar reads it: the form (`control`, `lang`, `pending`, `local`, `command`), the command
    when it is one, its named words (the command's own) and its arguments, in order."""

    form: str
    command: Subcommand | None
    named: tuple[Word, ...]
    args: tuple[Word, ...]


def parse(words: list[Word], local: Collection[str] = ()) -> Parsed | None:
    """What the grammar makes of `words` (graphs.grammar.read_words, as typed in order); None: no form of it, or a
    workflow's word with none of its subcommands (`rule 2`). A line read as a command is that command before it is
    one of the surface's own, `local` (显示规则 9 is `rule show 9` on the console too, where `show NAME` is its own):
    lark reads a word as one terminal, and LOCAL or LEAD for `show` is only told by the words after it."""
    return _parse(words, ()) or (_parse(words, local) if local else None)


def _parse(words: list[Word], local: Collection[str]) -> Parsed | None:
    try:
        tree = parser().parse(_Line(words, local), start="start")  # a custom input, as lark allows
    except LarkError:
        return None
    form = tree.children[0]
    assert isinstance(form, Tree)
    if form.data != "command":
        return Parsed(str(form.data), None, (words[_named_at(form)],),
                      tuple(words[at] for at in _places(form.children)))
    rule = form.children[0]
    assert isinstance(rule, Tree)
    kind, _sep, name = str(rule.data).partition("__")
    if kind == "top":
        return Parsed("command", registry.COMMANDS[name], (words[_named_at(rule)],),
                      tuple(words[at] for at in _places(rule.children)))
    return _subcommand(registry.WORKFLOWS[name], rule, words)


def _places(children: list[Any]) -> list[int]:
    """The places of the words in `children`'s subtrees (a `lead` or an `arg` each, one token), in order."""
    return [_named_at(child) for child in children if isinstance(child, Tree)]


def _named_at(rule: Tree[Token]) -> int:
    """The place of a tree's own word (a command's, a control's, `lang`; a `lead`'s or an `arg`'s): its one token
    child."""
    return int(next(child for child in rule.children if isinstance(child, Token)))


def _subcommand(workflow: Workflow, rule: Tree[Token], words: list[Word]) -> Parsed | None:
    """A workflow's command: its subcommand word is the word after the workflow's (noun first) or the first
    (verb first); `all` in that place is the list of all, `all` its first argument."""
    noun = isinstance(rule.children[0], Token)
    at = _named_at(rule)
    places = _places(rule.children)
    sub_at = at + 1 if noun else places[0]
    name = words[sub_at].read.lower()
    if name in workflow.subcommands:
        named = (words[at], words[sub_at]) if noun else (words[sub_at], words[at])
        return Parsed("command", workflow.subcommands[name], named,
                      tuple(words[place] for place in places if place != sub_at))
    if name == "all" and "list" in workflow.subcommands:
        return Parsed("command", workflow.subcommands["list"], (words[at],), tuple(words[place] for place in places))
    return None


def command_for(text: str) -> tuple[Subcommand, list[str]] | None:
    """The command `text` calls and its arguments as the command reads them (`arguments`), if any."""
    parsed = parse(read_words(text))
    if parsed is None or parsed.command is None:
        return None
    return parsed.command, arguments(parsed.command, parsed.named, parsed.args)


def arguments(command: Subcommand, named: Iterable[Word], words: Iterable[Word]) -> list[str]:
    """The command's arguments as it reads them (`argument`): a part typed apart from the command's words whole (a
    rule's words stay as written), the pieces of one typed together with them (`删除规则2`) one by one, a part that
    reads as several dates (`2020年1月1日至2020年6月1日`) date by date; a person's free text (a reason, from
    `free_text_from` on) as typed: `恢复` in a reason is not the keyword `resume`."""
    shared = {word.at for word in named}
    by_part: dict[int, list[Word]] = {}
    for word in words:
        by_part.setdefault(word.at, []).append(word)
    args: list[str] = []
    for at, part in by_part.items():
        if at in shared:
            args += [word.typed for word in part]
        elif len(part) > 1 and all(DATE.match(word.read) for word in part):
            args += [word.read for word in part]
        else:
            args.append(part[0].part)
    cut = len(args) if command.free_text_from is None else command.free_text_from
    return [argument(arg) for arg in args[:cut]] + args[cut:]


def answer(text: str) -> str | int | None:
    """An answer to a question as the grammar reads it: "yes" (是, 对, y), "no" (不, n), an option's number, or
    None (anything else)."""
    words = read_words(text)
    try:
        tree = parser().parse(_Line(words, ()), start="answer")  # a custom input, as lark allows
    except LarkError:
        return None
    return int(words[0].read) if tree.data == "number" else str(tree.data)
