"""Token accounting for the desk's budget. Before each call the prompt is estimated and the answer is capped
(`max_tokens`) at what is left of the stage's share, so a stage ends at its share rather than one call past it;
a stage that cannot fit another call stops and says where. After the call the endpoint's reported usage counts
(an estimate when it reports none)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from graphs.analyze.words import stopped_in
from graphs.common import message_text
from tools.i18n import _

CHARS_PER_TOKEN = 4  # Latin text; each CJK character is counted as a token of its own
WIDE = re.compile("[\u3000-\u9fff\uf900-\ufaff\uff00-\uffef]")  # CJK punctuation, ideographs, full-width forms
MIN_ANSWER_TOKENS = 200  # a call allowed fewer answer tokens than this is not made: the stage stops instead


def estimate_tokens(text: str) -> int:
    """A tokenizer-free upper-side estimate: one token per CJK character, one per four other characters."""
    wide = len(WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / CHARS_PER_TOKEN)


def prompt_tokens(prompt: Sequence[BaseMessage], tools: Sequence[BaseTool] = ()) -> int:
    """The estimated size of a call's prompt: its messages, their tool calls, and the tool schemas sent."""
    text = "".join(message_text(m) for m in prompt)
    text += "".join(json.dumps(m.tool_calls, default=str) for m in prompt if isinstance(m, AIMessage) and m.tool_calls)
    return estimate_tokens(text + "".join(json.dumps(convert_to_openai_tool(t)) for t in tools))


def answer_allowance(prompt: int, used: int, budget: int, most: int) -> int | None:
    """The answer tokens the next call may ask for: what the budget has left, at most `most` (the model's output
    limit: endpoints refuse a larger max_completion_tokens), or None when the call cannot fit."""
    left = budget - used - prompt
    return min(left, most) if left >= MIN_ANSWER_TOKENS else None


def tokens_of(prompt: Sequence[BaseMessage], answer: AIMessage) -> int:
    """Tokens one call used: `usage_metadata.total_tokens` when the endpoint reports it, else the estimate."""
    usage = answer.usage_metadata
    if usage and usage.get("total_tokens"):
        return int(usage["total_tokens"])
    return prompt_tokens([*prompt, answer])


def cut_at_budget(answer: AIMessage) -> bool:
    """The endpoint stopped the answer at its token cap (finish_reason "length")."""
    return (answer.response_metadata or {}).get("finish_reason") == "length"


def budget_note(stage: str, used: int, budget: int, cut: bool = False) -> str:
    """Where and why the desk stopped, for the token budget."""
    why = (_("its answer was cut off at what was left of its part of this decision's token budget, {budget} tokens "
             "({used} used); raise QUANTDESK_DECISION_TOKEN_BUDGET or ask with a lower depth or fewer analysts")
           if cut else
           _("there is not enough left for another call in its part of this decision's token budget, {budget} "
             "tokens ({used} used); raise QUANTDESK_DECISION_TOKEN_BUDGET or ask with a lower depth or fewer "
             "analysts"))
    return stopped_in(stage, why.format(budget=f"{budget:,}", used=f"{used:,}"))
