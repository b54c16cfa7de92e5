"""Token accounting for the desk's budget: the model's reported usage, or an estimate when it reports none."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from graphs.common import message_text

CHARS_PER_TOKEN = 4  # the estimate used when an endpoint reports no usage


def tokens_of(prompt: Sequence[BaseMessage], answer: AIMessage) -> int:
    """Tokens one call used: `usage_metadata.total_tokens` when the endpoint reports it, else characters / 4."""
    usage = answer.usage_metadata or {}
    if usage.get("total_tokens"):
        return int(usage["total_tokens"])
    chars = sum(len(message_text(m)) for m in prompt) + len(message_text(answer))
    chars += len(json.dumps(answer.tool_calls, default=str)) if answer.tool_calls else 0
    return max(1, chars // CHARS_PER_TOKEN)


def over_budget(used: int, budget: int) -> bool:
    return used >= budget


def budget_note(stage: str, used: int, budget: int) -> str:
    """Where and why the desk stopped."""
    return (f"stopped in {stage}: its part of this decision's token budget, {budget:,} tokens, is spent ({used:,} "
            "used); raise QUANTDESK_DECISION_TOKEN_BUDGET or ask with a lower depth or fewer analysts")
