"""Trajectory evaluations: each case in testkit/evals/*.json is a request to one workflow graph with scripted model
answers, the answers to its interrupts, and a reference path through the graph written by hand.

`run_case` drives the graph the way the bot does (GraphThread: a fresh SQLite checkpointer per turn, resumes by
interrupt id) and returns what happened: the node path as agentevals extracts it from the thread's checkpoints, the
path of every subgraph, the interrupts, the messages each scripted agent saw and wrote, the rule's execution log.
`compare` checks that against the case with agentevals' evaluators (graph_trajectory_strict_match for paths,
create_trajectory_match_evaluator for messages) and, because they answer only true or false, computes the
differences itself: every line it returns names the case and the step that changed.

Case format (one JSON file per workflow; `agents` maps an agent's name to a marker of its system prompt):
- request: the first message; `{rule}` is replaced by the id of the rule `setup.rule` saves
- models: {"base": a name in the file's `model_sets`, "llm": {agent: [answer, ...]}, "light": {...}}; an answer is
  {"text": ...}, {"json": {...}}, {"tool": name, "args": {...}} or {"tools": [{"name": ..., "args": ...}, ...]};
  a queue given as null removes that agent from the base; no models means no LLM is configured
- interrupts: in order, {"kind": "clarify", "answer": text} or {"kind": "code_review" | "approval",
  "decision": {...}, "by": user (default UBOB; traders: UTRADER)}; "says" is text the payload must contain
- path: the steps of `extract_langgraph_trajectory_from_thread` (one list per run up to an interrupt or the end; the
  node a resume continues is not listed again); a list inside a step is a set of parallel branches whose order is
  free; a run that raised shows as its nodes and `__error__`
- subpaths: {subgraph node: steps} for subgraphs (their checkpoints are evaluated on their own)
- messages: [{"agents": [...] | "source": "execution_log", "mode": strict|unordered|subset|superset,
  "tool_args": exact|ignore|subset|superset, "expected": [...]}]; an expected message is "user", "answer", "tool",
  {"call": name, "args": {...}}, {"calls": [...]}, or {"user" | "answer" | "tool": text it must contain}
- outcome: {"reply": text the final reply contains, "result": {dotted.key: value} the result must hold,
  "no_result": true}
"""

from __future__ import annotations

import copy
import json
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentevals.graph_trajectory.strict import graph_trajectory_strict_match
from agentevals.graph_trajectory.utils import (
    extract_langgraph_trajectory_from_snapshots,
    extract_langgraph_trajectory_from_thread,
)
from agentevals.trajectory.match import create_trajectory_match_evaluator
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.messages.utils import convert_to_openai_messages
from langchain_core.outputs import ChatResult
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot
from langsmith.run_helpers import tracing_context
from pydantic import Field
from sqlalchemy import Engine

from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.registry import WORKFLOWS
from testkit.desk import clock_at_data_end, desk_context
from testkit.fakes.chat import ScriptedChatModel, ScriptedModels, ScriptError, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.data.klines import AShareKlines
from tools.data.local import SampleProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox

EVALS = Path(__file__).resolve().parent
DATASETS = ("signal", "factor", "decision", "execution")
REQUESTER = "UALICE"
ROLES = {"user": "user", "answer": "assistant", "tool": "tool"}
MODES = ("strict", "unordered", "subset", "superset")
ARG_MODES = ("exact", "ignore", "subset", "superset")


# --- cases ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    dataset: str  # the file's stem: signal, factor, decision, execution
    workflow: str  # the registry's name of the graph: signal, factor, analyze, rule
    agents: dict[str, str]  # agent name -> a marker of its system prompt
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.dataset}/{self.spec['id']}"

    def with_spec(self, **changes: Any) -> Case:
        """A copy with some fields of the case replaced (for the meta test)."""
        return replace(self, spec={**copy.deepcopy(self.spec), **changes})


def load_cases(folder: Path = EVALS) -> list[Case]:
    """Every case of every dataset, with the file's model sets merged into each case's models."""
    cases = []
    for stem in DATASETS:
        data = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8"))
        if data["workflow"] not in WORKFLOWS:
            raise ValueError(f"{stem}.json: unknown workflow {data['workflow']!r}")
        for spec in data["cases"]:
            spec = {**spec, "models": _merged_models(data.get("model_sets", {}), spec.get("models"))}
            case = Case(stem, data["workflow"], data["agents"], spec)
            _validate(case)
            cases.append(case)
    ids = [c.id for c in cases]
    if len(ids) != len(set(ids)):
        raise ValueError(f"duplicate case ids: {[i for i, n in Counter(ids).items() if n > 1]}")
    return cases


def _validate(case: Case) -> None:
    """A mistake in a dataset is an error when it loads, not a case that passes by accident."""
    spec, problems = case.spec, []
    problems += [f"missing {key!r}" for key in ("id", "about", "request", "path") if key not in spec]
    for n, asked in enumerate(spec.get("interrupts", []), 1):
        needs = {"clarify": "answer", "code_review": "decision", "approval": "decision"}.get(asked.get("kind"))
        if needs is None or needs not in asked:
            problems.append(f"interrupt {n} needs a kind (clarify, code_review, approval) and its answer or decision")
    for which, queues in spec["models"].items():
        problems += [f"{which} agent {a!r} has no marker in `agents`" for a in queues if a not in case.agents]
    for check in spec.get("messages", []):
        if check.get("mode") not in MODES or check.get("tool_args", "ignore") not in ARG_MODES:
            problems.append(f"a messages check needs mode in {MODES} and tool_args in {ARG_MODES}")
        if "agents" not in check and check.get("source") != "execution_log":
            problems.append("a messages check needs agents or source execution_log")
    if problems:
        raise ValueError(f"{case.id}: " + "; ".join(problems))


def _merged_models(sets: dict[str, Any], models: dict[str, Any] | None) -> dict[str, dict[str, list[Any]]]:
    if not models:
        return {}
    base = copy.deepcopy(sets[models["base"]]) if "base" in models else {}
    merged: dict[str, dict[str, list[Any]]] = {}
    for which in ("llm", "light"):
        queues = {**base.get(which, {}), **models.get(which, {})}
        if which in base or which in models:
            merged[which] = {agent: queue for agent, queue in queues.items() if queue is not None}
    return merged


def to_message(spec: dict[str, Any]) -> AIMessage:
    """One scripted answer from its JSON form."""
    if "text" in spec:
        return answer(spec["text"])
    if "json" in spec:
        return answer(json.dumps(spec["json"], ensure_ascii=False))
    if "tool" in spec:
        return tool_call(spec["tool"], **spec.get("args", {}))
    if "tools" in spec:
        calls = [tool_call(c["name"], **c.get("args", {})).tool_calls[0] for c in spec["tools"]]
        return AIMessage(content="", tool_calls=calls)
    raise ValueError(f"a scripted answer needs text, json, tool or tools: {spec}")


# --- scripted models that keep a record ------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One model call: the agent (its name in the dataset), the prompt it was given and the reply."""

    agent: str
    prompt: list[BaseMessage]
    reply: AIMessage


class RecordingChatModel(ScriptedChatModel):
    """A ScriptedChatModel keyed by agent markers that also records each call with the agent's name."""

    names: dict[str, str] = Field(default_factory=dict)  # marker -> agent name
    calls: list[Call] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        marker = self._key(messages) or ""
        reply = result.generations[0].message
        assert isinstance(reply, AIMessage)
        with self._lock:
            self.calls.append(Call(self.names.get(marker, marker), list(messages), reply))
        return result


def scripted(case: Case, which: str, models: ScriptedModels) -> RecordingChatModel | None:
    """The case's `which` model (llm or light), registered with `models` so its teardown check covers it."""
    queues = case.spec["models"].get(which)
    if queues is None:
        return None
    model = RecordingChatModel(scripts={case.agents[a]: [to_message(m) for m in q] for a, q in queues.items()},
                               names={case.agents[a]: a for a in queues})
    models.made.append(model)
    return model


# --- running a case -------------------------------------------------------------------------------------


@dataclass
class Observed:
    """What one run of a case did."""

    path: list[list[str]] = field(default_factory=list)
    subpaths: dict[str, list[list[str]]] = field(default_factory=dict)
    interrupts: list[str] = field(default_factory=list)  # the kinds, in order
    problems: list[str] = field(default_factory=list)  # interrupts that did not match, crashes
    calls: list[Call] = field(default_factory=list)
    execution_log: list[dict[str, Any]] = field(default_factory=list)  # OpenAI-format messages of the rule's steps
    reply: str | None = None
    result: dict[str, Any] | None = None
    leftovers: dict[str, int] = field(default_factory=dict)


def run_case(case: Case, url: str, engine: Engine, sandbox: Sandbox, models: ScriptedModels) -> Observed:
    """Run the case's graph (built from the registry) on its request, answering interrupts as the case says."""
    llm, light = scripted(case, "llm", models), scripted(case, "light", models)
    provider = SampleProvider()
    rules = RuleStore(engine, frozenset())
    ctx: WorkflowContext = desk_context(engine, sandbox, provider, llm, light, rules=rules,
                                        klines=lambda symbol: AShareKlines(provider))
    request, rule_id = case.spec["request"], None
    if case.workflow == "analyze":  # the desk decides as of the data's last day and trades there (its own database)
        clock_at_data_end(engine, provider)
    if "rule" in case.spec.get("setup", {}):
        wanted = dict(case.spec["setup"]["rule"])
        rule = rules.add(REQUESTER, "evals", wanted.pop("symbol"), wanted.pop("requirements"), **wanted)
        rule_id = rule.id
        request = request.replace("{rule}", str(rule.id))
    thread = GraphThread(url, ctx, build=WORKFLOWS[case.workflow].build, requester=REQUESTER)
    seen = Observed()
    out: dict[str, Any] = {}
    try:
        out = thread.say(request)
        for n, expected in enumerate(case.spec.get("interrupts", []), 1):
            pending = out.get("__interrupt__") or []
            if len(pending) != 1:
                seen.problems.append(f"interrupt {n}: expected {expected['kind']}, got "
                                     + (f"{len(pending)} at once" if pending else _ended(out)))
                break
            value = pending[0].value
            seen.interrupts.append(value.get("type"))
            if value.get("type") != expected["kind"]:
                seen.problems.append(f"interrupt {n}: expected {expected['kind']}, got {value.get('type')}")
                break
            shown = json.dumps(value, ensure_ascii=False, default=str)
            if expected.get("says") and expected["says"] not in shown:
                said = value.get("question") or value.get("description") or \
                    (value.get("action_requests") or [{}])[0].get("description") or shown
                seen.problems.append(f"interrupt {n} ({expected['kind']}): expected it to say {expected['says']!r}, "
                                     f"it says {_short(said)}")
            if expected["kind"] == "clarify":
                out = thread.answer(out, expected["answer"])
            else:
                out = thread.decide(out, expected["decision"], user=expected.get("by", "UBOB"))
        extra = out.get("__interrupt__") or []
        if extra:
            seen.interrupts += [i.value.get("type") for i in extra]
            seen.problems.append(f"interrupt {len(case.spec.get('interrupts', [])) + 1}: expected the run to end, "
                                 f"got {', '.join(str(i.value.get('type')) for i in extra)}")
    except (Exception, ScriptError) as exc:  # a crash, a script run out or refused: reported with the path so far
        seen.problems.append(f"the run stopped with {type(exc).__name__}: {_short(str(exc), 300)}")
    seen.reply, seen.result = out.get("final_reply"), out.get("result")
    seen.path, seen.subpaths = trajectories(url, WORKFLOWS[case.workflow].build, thread.config)
    seen.calls = [c for m in (llm, light) if m is not None for c in m.calls]
    seen.leftovers = {f"{which}:{m.names.get(k, k)}": n for which, m in (("llm", llm), ("light", light))
                      if m is not None for k, n in m.leftovers().items()}
    if rule_id is not None:
        seen.execution_log = execution_log_messages(rules, rule_id)
    return seen


def _ended(out: dict[str, Any]) -> str:
    return f"the end of the run (final reply: {_short(out.get('final_reply') or '')})"


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= limit else text[:limit] + "…")


def trajectories(url: str, build: Any, config: dict[str, Any]) -> tuple[list[list[str]], dict[str, list[list[str]]]]:
    """The thread's path through the graph and the path of each subgraph it ran, each level on its own.

    `extract_langgraph_trajectory_from_thread` follows subgraph checkpoints into the same list, which mixes the
    levels (a subgraph's nodes land inside the parent's steps); when the thread ran subgraphs, the top level is
    extracted from its own snapshots and each subgraph from its own checkpoint namespace, its nodes unprefixed."""
    with open_checkpointer(url) as saver, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "inputs and results have different lengths": not used here
        graph: CompiledStateGraph = build(saver)
        history = list(graph.get_state_history(config))
        children = [(t.name, t.state) for snap in reversed(history) for t in snap.tasks if t.state]
        if not children:
            return _with_unfinished(extract_langgraph_trajectory_from_thread(graph, config), history), {}
        top = _with_unfinished(extract_langgraph_trajectory_from_snapshots(history), history)
        subpaths: dict[str, list[list[str]]] = {}
        namespaces: set[str] = set()
        for name, child in children:
            namespace = child["configurable"]["checkpoint_ns"]
            if namespace in namespaces:
                continue
            namespaces.add(namespace)
            own = list(graph.get_state_history(child))
            steps = _with_unfinished(extract_langgraph_trajectory_from_snapshots(own), own)
            prefix = namespace.split(":", 1)[0] + ":"  # the extractor names a subgraph's nodes `name:node`
            subpaths.setdefault(name, []).extend([[n.removeprefix(prefix) for n in step] for step in steps])
        return top, subpaths


def _with_unfinished(extracted: Any, history: list[StateSnapshot]) -> list[list[str]]:
    """The extracted steps, plus the run that stopped on an error (the extractor leaves out a run that reached
    neither an interrupt nor the end): its nodes up to the failing one, then `__error__`."""
    steps = extracted["outputs"]["steps"]
    if not history or not history[0].next or any(t.interrupts for t in history[0].tasks):
        return steps
    tail: list[str] = []
    for snapshot in history:  # newest first, back to the end of the previous run
        if snapshot is not history[0] and (not snapshot.next or any(t.interrupts for t in snapshot.tasks)):
            break
        tail = [t.name for t in snapshot.tasks] + tail
    return [*steps, [*tail, "__error__"]]


def execution_log_messages(rules: RuleStore, rule_id: int) -> list[dict[str, Any]]:
    """The rule's logged steps as OpenAI-format messages: each step an assistant tool call (the tool, the
    calculation or `decision`) and the result as the tool's answer."""
    messages: list[dict[str, Any]] = []
    for step in rules.steps(rule_id):
        action = step.action_data.get("action") or {}
        if step.action_type == "tool_call":
            name, args = str(action.get("tool_name")), action.get("params") or {}
        elif step.action_type == "calculation":
            name, args = str(action.get("calculation_type") or action.get("name")), action.get("params") or {}
        else:
            name, args = step.action_type, {k: action.get(k) for k in ("action", "confidence")}
        call_id = f"step{step.step}"
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "id": call_id, "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": call_id,
                         "content": json.dumps(step.result_data, ensure_ascii=False, default=str)})
    return messages


def transcripts(calls: list[Call], agents: list[str]) -> list[dict[str, Any]]:
    """The agents' conversations as OpenAI-format messages (system prompts left out): one run of an agent is
    every call from the first (whose prompt has no answer of the model yet) to the last, whose prompt carries the
    whole conversation and whose reply ends it."""
    messages: list[dict[str, Any]] = []
    for agent in agents:
        runs: list[Call] = []
        for call in (c for c in calls if c.agent == agent):
            if runs and any(isinstance(m, AIMessage) for m in call.prompt):
                runs[-1] = call
            else:
                runs.append(call)
        for run in runs:
            kept = [m for m in run.prompt if not isinstance(m, SystemMessage)] + [run.reply]
            messages += convert_to_openai_messages(kept)
    return messages


# --- comparing ----------------------------------------------------------------------------------------------


def expected_message(spec: str | dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """An OpenAI-format reference message from its short form, and the text its content must contain."""
    if isinstance(spec, str):
        role, contains = ROLES[spec], None
    elif "call" in spec or "calls" in spec:
        calls = spec.get("calls") or [{"name": spec["call"], "args": spec.get("args", {})}]
        return {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "id": "", "function": {"name": c["name"], "arguments": json.dumps(c.get("args", {}))}}
            for c in calls]}, None
    else:
        ((kind, contains),) = spec.items()
        role = ROLES[kind]
    message: dict[str, Any] = {"role": role, "content": ""}
    if role == "tool":
        message["tool_call_id"] = ""
    return message, contains


def _calls(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in message.get("tool_calls") or []]


def _describe(message: dict[str, Any]) -> str:
    calls = _calls(message)
    if calls:
        return "call " + ", ".join(f"{n}({json.dumps(a, ensure_ascii=False)[:60]})" for n, a in calls)
    role = {"assistant": "answer"}.get(message["role"], message["role"])
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return f"{role} {_short(text, 70)}" if text else role


def _args_match(mode: str, got: dict[str, Any], want: dict[str, Any]) -> bool:
    if mode == "ignore":
        return True
    if mode == "superset":
        return all(k in got and got[k] == v for k, v in want.items())
    if mode == "subset":
        return all(k in want and want[k] == v for k, v in got.items())
    return got == want


def _unmatched(first: list[tuple[str, dict[str, Any]]], second: list[tuple[str, dict[str, Any]]], mode: str,
               reverse: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The calls of `first` that no distinct call of `second` matches (by name, and args by `mode`)."""
    used: set[int] = set()
    left = []
    for name, args in first:
        hit = next((i for i, (n, a) in enumerate(second) if i not in used and n == name
                    and (_args_match(mode, a, args) if not reverse else _args_match(mode, args, a))), None)
        if hit is None:
            left.append((name, args))
        else:
            used.add(hit)
    return left


def message_differences(mode: str, tool_args: str, got: list[dict[str, Any]],
                        expected: list[str | dict[str, Any]]) -> list[str]:
    """What differs between the messages `got` and the `expected` short forms, under the evaluator's `mode`."""
    reference = [expected_message(e) for e in expected]
    if mode != "strict":
        got_calls = [c for m in got for c in _calls(m)]
        want_calls = [c for m, _ in reference for c in _calls(m)]
        missing = _unmatched(want_calls, got_calls, tool_args) if mode in ("unordered", "superset") else []
        extra = _unmatched(got_calls, want_calls, tool_args, reverse=True) if mode in ("unordered", "subset") else []
        return ([f"expected call {n}({json.dumps(a)}) was not made" for n, a in missing]
                + [f"call {n}({json.dumps(a)}) is not in the reference" for n, a in extra])
    lines = []
    for i, (have, (want, contains)) in enumerate(zip(got, reference, strict=False)):
        same_calls = (not _unmatched(_calls(want), _calls(have), tool_args)
                      and len(_calls(want)) == len(_calls(have)))
        content = have.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if have["role"] != want["role"] or not same_calls or (contains and contains not in text):
            wanted = _describe(want) + (f" containing {contains!r}" if contains else "")
            lines.append(f"message {i + 1}: expected {wanted}, got {_describe(have)}")
    if len(got) != len(reference):
        common = min(len(got), len(reference))
        rest = [_describe(m) for m in got[common:]] or "no more messages"
        wanted = [_describe(m) for m, _ in reference[common:]] or "no more messages"
        last = max(len(got), len(reference))
        where = f"message {last}" if last == common + 1 else f"messages {common + 1}-{last}"
        lines.append(f"{where}: expected {wanted}, got {rest}")
    return lines


def _canonical(got: list[str], want: list[str | list[str]]) -> tuple[list[str], list[str]]:
    """Both steps flat, each parallel group of the reference sorted in both when `got` ran exactly that group
    there (so the branches' order is free)."""
    have, expected, at = list(got), [], 0
    for item in want:
        if isinstance(item, list):
            if sorted(have[at:at + len(item)]) == sorted(item):
                have[at:at + len(item)] = sorted(item)
                expected += sorted(item)
            else:
                expected += item
            at += len(item)
        else:
            expected.append(item)
            at += 1
    return have, expected


def path_differences(label: str, got: list[list[str]], want: list[list[str | list[str]]]) -> tuple[list[str], bool]:
    """Every step of the path that differs (with the first node that does), and the strict evaluator's score."""
    pairs = [_canonical(got[i] if i < len(got) else [], want[i] if i < len(want) else [])
             for i in range(max(len(got), len(want)))]
    have, expected = [h for h, _ in pairs][:len(got)], [e for _, e in pairs][:len(want)]
    with tracing_context(enabled=False):
        score = bool(graph_trajectory_strict_match(outputs={"inputs": [], "results": [], "steps": have},
                                                   reference_outputs={"inputs": [], "results": [],
                                                                      "steps": expected})["score"])
    lines = []
    if len(got) != len(want):
        lines.append(f"{label}: expected {len(want)} step(s) (runs up to an interrupt or the end), got {len(got)}")
    for i, (h, e) in enumerate(pairs, 1):
        if i > len(got) or i > len(want):
            lines.append(f"{label} step {i} expected {e if i <= len(want) else '(no step)'} "
                         f"got {h if i <= len(got) else '(no step)'}")
        elif h != e:
            at = next((j for j, (a, b) in enumerate(zip(h, e, strict=False)) if a != b), min(len(h), len(e)))
            window = slice(max(at - 1, 0), at + 1)
            lines.append(f"{label} step {i} expected {e[window]} got {h[window]} (node {at + 1}); "
                         f"whole step expected {e} got {h}")
    return lines, score


def compare(case: Case, seen: Observed) -> list[str]:
    """Every way the run differs from the case, each line naming the case; empty when it matches."""
    spec, lines = case.spec, list(seen.problems)
    expected_kinds = [i["kind"] for i in spec.get("interrupts", [])]
    if seen.interrupts != expected_kinds and not seen.problems:
        lines.append(f"interrupts: expected {expected_kinds}, got {seen.interrupts}")
    found, score = path_differences("path", seen.path, spec["path"])
    lines += found or ([] if score else ["path: graph_trajectory_strict_match scored false"])
    for name, steps in spec.get("subpaths", {}).items():
        if name not in seen.subpaths:
            lines.append(f"{name} path: the subgraph {name} never ran (ran: {sorted(seen.subpaths)})")
            continue
        found, score = path_differences(f"{name} path", seen.subpaths[name], steps)
        lines += found or ([] if score else [f"{name} path: graph_trajectory_strict_match scored false"])
    for check in spec.get("messages", []):
        lines += _check_messages(check, seen)
    lines += _check_outcome(spec.get("outcome", {}), seen)
    if seen.leftovers:
        lines.append(f"scripted answers never asked for: {seen.leftovers}")
    return [f"{case.id}: {line}" for line in lines]


def _check_messages(check: dict[str, Any], seen: Observed) -> list[str]:
    mode, tool_args = check["mode"], check.get("tool_args", "ignore")
    if check.get("source") == "execution_log":
        got, label = seen.execution_log, "execution log"
    else:
        got, label = transcripts(seen.calls, check["agents"]), "messages of " + ", ".join(check["agents"])
    reference = [expected_message(e)[0] for e in check["expected"]]
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode=mode, tool_args_match_mode=tool_args)
    with tracing_context(enabled=False):
        score = bool(evaluator(outputs=got, reference_outputs=reference)["score"])
    found = message_differences(mode, tool_args, got, check["expected"])
    if not score and not found:
        found = [f"the {mode} trajectory evaluator scored false"]
    return [f"{label} ({mode}): {line}" for line in found]


def _check_outcome(outcome: dict[str, Any], seen: Observed) -> list[str]:
    lines = []
    if "reply" in outcome and outcome["reply"] not in (seen.reply or ""):
        lines.append(f"final reply: expected it to contain {outcome['reply']!r}, got {_short(seen.reply or '')}")
    for key, value in outcome.get("result", {}).items():
        got = _dig(seen.result, key)
        if got != value:
            lines.append(f"result {key}: expected {value!r}, got {got!r}")
    if outcome.get("no_result") and seen.result:
        lines.append(f"expected no result, got one: {_short(json.dumps(seen.result, default=str))}")
    return lines


def _dig(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
