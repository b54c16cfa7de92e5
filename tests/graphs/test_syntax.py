"""Issue 37: the command grammar (graphs/syntax.py, graphs/syntax.lark), parsed by lark. Every declared command has
its rule, in both orders for a workflow's subcommands; a keyword is a keyword only where the grammar takes one; a
command goes before a surface's own word; answers are yes, no or a number. What each phrasing is read as, end to
end, is tests/graphs/test_conversation.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphs import names, syntax
from graphs.grammar import read_words
from graphs.registry import COMMANDS, WORKFLOWS
from tools.data.factory import provider_from_settings
from tools.settings import Settings


@pytest.fixture(autouse=True, scope="module")
def _sample_names() -> Iterator[None]:
    names.use(provider_from_settings(Settings(_env_file=None, QUANTDESK_DATA_PROVIDER="sample")))
    yield


def parsed(text: str, local: tuple[str, ...] = ()) -> syntax.Parsed | None:
    return syntax.parse(read_words(text), local)


@pytest.mark.parametrize(("workflow", "sub"), [(w.name, s) for w in WORKFLOWS.values() for s in w.subcommands])
def test_every_subcommand_reads_noun_first_and_verb_first(workflow: str, sub: str) -> None:
    command = WORKFLOWS[workflow].subcommands[sub]
    for text in (f"{workflow} {sub} 7", f"{sub} {workflow} 7"):
        found = parsed(text)
        assert found is not None and found.command is command, text
        assert [word.read for word in found.args] == ["7"], text


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_of_its_own_has_its_rule(name: str) -> None:
    found = parsed(f"{name} 7")
    assert found is not None and found.command is COMMANDS[name]
    assert [word.read for word in found.args] == ["7"]


def test_a_keyword_is_a_keyword_only_where_the_grammar_takes_one() -> None:
    """After `trading`, 恢复 (resume) is a reason; before 规则 it is the verb; `rule 2` is no command."""
    found = parsed("trading off 恢复")
    assert found is not None and found.command is COMMANDS["trading"]
    assert [word.typed for word in found.args] == ["off", "恢复"]
    found = parsed("恢复规则 2")
    assert found is not None and found.command is WORKFLOWS["rule"].subcommands["resume"]
    assert parsed("rule 2") is None and parsed("规则 香蕉") is None


def test_a_command_goes_before_a_surface_s_own_word() -> None:
    """`show` is the console's own command (`show NAME`) and a rule's verb (显示规则 9)."""
    found = parsed("显示规则 9", ("show",))
    assert found is not None and found.command is WORKFLOWS["rule"].subcommands["show"]
    found = parsed("show prices", ("show",))
    assert found is not None and found.form == "local" and [word.read for word in found.args] == ["prices"]


@pytest.mark.parametrize(("typed", "read"), [
    ("是", "yes"), ("对", "yes"), ("好的", "yes"), ("Y", "yes"), ("确认", "yes"), ("不", "no"), ("n", "no"),
    ("算了", "no"), ("2", 2), ("２", 2), ("是 的", None), ("600519.SH", None), ("二", None),
])
def test_an_answer_is_yes_no_or_a_number(typed: str, read: str | int | None) -> None:
    assert syntax.answer(typed) == read


def test_the_grammar_is_generated_from_the_registry() -> None:
    text = syntax.grammar_text()
    assert all(f"top__{name}:" in text for name in COMMANDS)
    assert all(f"sub__{w.name}:" in text for w in WORKFLOWS.values() if w.subcommands)
