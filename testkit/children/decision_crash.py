"""The process tests/graphs/test_decision_crash.py kills: one decision desk run on the sample data whose four analysts
answer from their scripts, whose bull speaks, and whose bear never answers. When the bear is asked, the marker
file appears and the process sleeps until it is SIGKILLed.

Usage: python -m testkit.children.decision_crash DATABASE_URL DESK_NAMESPACE THREAD_ID ACCOUNT MARKER"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphs.analyze.graph import build_analyze_graph
from graphs.checkpointer import open_checkpointer
from testkit.desk import ROLES, desk_context, desk_scripts
from testkit.fakes.chat import ScriptedChatModel, answer
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.db import make_engine

CODE = "600519.SH"
REQUESTER = "UALICE"
SUMMARY = "summary of the day"


class BearHangs(ScriptedChatModel):
    """The desk's model: scripted by role, except that a bear turn beyond the bear's script never comes back: when
    it is asked, the marker file appears and the process sleeps until it is SIGKILLed."""

    marker: str = ""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        system = "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        if ROLES["bear"] in system and not self.scripts.get(ROLES["bear"]):
            partial = Path(f"{self.marker}.partial")
            partial.write_text(f"bear asked in process {os.getpid()}\n")
            os.replace(partial, self.marker)  # the marker appears whole or not at all
            while True:  # until the SIGKILL
                time.sleep(3600)
        return super()._generate(messages, *args, **kwargs)


class AlwaysSummarizes(ScriptedChatModel):
    """The light model: every memory summary gets the same answer."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        with self._lock:
            self.prompts.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=answer(SUMMARY))])


def main(url: str, namespace: str, thread: str, account: str, marker: str) -> None:
    engine = make_engine(url)
    sandbox = Sandbox(workers=1)  # the desk never runs code: no worker process is ever started
    ctx = desk_context(engine, sandbox, SampleProvider(), BearHangs(scripts=desk_scripts(bear=[]), marker=marker),
                       AlwaysSummarizes(), desk_namespace=namespace)
    with open_checkpointer(url) as saver:
        build_analyze_graph(saver).invoke(
            {"messages": [HumanMessage(f"analyze {CODE} account={account}")], "requester": REQUESTER},
            {"configurable": {"thread_id": thread}}, context=ctx)
    # the bear never answers, so the run cannot end: getting here is a failure the parent reports
    print("the run finished although the bear never answered", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main(*sys.argv[1:6])
