"""The seeds' get_llm / get_light_llm (OpenAI-compatible chat models from settings, or None without one), and
what a workflow says when a configured model's answer cannot be used.

Call sites catch `MODEL_FAILURES` around a model call (`AGENT_FAILURES` around an agent run) and tell the user
`describe_model_failure(exc)`; any other exception is a bug and propagates."""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Sequence
from typing import Any, TypeVar

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, InvalidToolCall
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel, SecretStr, ValidationError

from graphs.common import last_ai_text, message_text, parse_json_object
from tools.i18n import _, current, ngettext, using
from tools.redact import redact, remember_settings
from tools.settings import Settings

log = logging.getLogger(__name__)

AnswerT = TypeVar("AnswerT", bound=BaseModel)

LLM_MAX_RETRIES = 2  # the client retries timeouts, dropped connections, HTTP 408/409/429 and 5xx this often


class ModelAnswerError(Exception):
    """The model answered, but not in a form the workflow can use (prose, nothing, or broken JSON where a JSON or
    structured answer was asked)."""


MODEL_FAILURES: tuple[type[Exception], ...] = (ModelAnswerError, openai.APIError)
AGENT_FAILURES: tuple[type[Exception], ...] = (*MODEL_FAILURES, GraphRecursionError)


def _chat(settings: Settings, model: str) -> BaseChatModel | None:
    if not settings.llm_configured:
        return None
    from langchain_openai import ChatOpenAI

    remember_settings(settings)  # an endpoint's error that echoes a secret is masked wherever it goes
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "not-needed"
    return ChatOpenAI(model=model, api_key=SecretStr(key), base_url=settings.openai_base_url, temperature=0,
                      timeout=settings.llm_timeout_seconds, max_retries=LLM_MAX_RETRIES)


def get_llm(settings: Settings) -> BaseChatModel | None:
    """The main model (reasoning, code)."""
    return _chat(settings, settings.model)


def get_light_llm(settings: Settings) -> BaseChatModel | None:
    """The light model (data fetching, routing)."""
    return _chat(settings, settings.light_model)


def get_deep_llm(settings: Settings) -> BaseChatModel | None:
    """The deep model (judges), when one is set apart from the main model (QUANTDESK_DEEP_MODEL)."""
    return _chat(settings, settings.deep_model) if settings.deep_model else None


def bounded(model: BaseChatModel, seconds: float) -> BaseChatModel:
    """`model` for a call that must end within `seconds`: each attempt's timeout is the smaller of its own and
    `seconds`, and only the retries that fit in `seconds` are kept (the client gives every attempt the full
    timeout). A model without an OpenAI client (a scripted one) comes back as it is."""
    from langchain_openai import ChatOpenAI  # loaded already when `model` is one: the start does not wait for it

    if not isinstance(model, ChatOpenAI) or not isinstance(model.request_timeout, int | float):
        return model
    own, root = model.request_timeout, model.root_client
    timeout = min(float(own), max(seconds, 0.0))
    retries = min(model.max_retries or 0, max(int(seconds // timeout) - 1, 0) if timeout else 0)
    if timeout == own and retries == model.max_retries or root is None:
        return model
    copy = model.model_copy(update={"request_timeout": timeout, "max_retries": retries})
    copy.root_client = root.with_options(timeout=timeout, max_retries=retries)
    copy.client = copy.root_client.chat.completions
    if model.root_async_client is not None:
        copy.root_async_client = model.root_async_client.with_options(timeout=timeout, max_retries=retries)
        copy.async_client = copy.root_async_client.chat.completions
    return copy


def parse_json_answer(text: str, what: str) -> dict[str, Any]:
    """The JSON object in a model's answer; ModelAnswerError naming `what` (an `N_` message id) was asked for when
    there is none."""
    if not text.strip():
        raise ModelAnswerError(_("it gave an empty answer instead of the JSON {what}").format(what=_(what)))
    try:
        return parse_json_object(text)
    except ValueError as exc:
        if "{" in text:
            detail = str(exc) if isinstance(exc, json.JSONDecodeError) else _("the object is never closed")
            raise ModelAnswerError(_("its JSON {what} is broken ({detail})").format(what=_(what), detail=detail)
                                   ) from exc
        start = " ".join(text.split())[:80]
        raise ModelAnswerError(_('it replied in prose instead of the JSON {what} ("{start}")').format(
            what=_(what), start=start)) from exc


def invoke_structured(model: BaseChatModel, messages: Sequence[BaseMessage], schema: type[AnswerT],
                      what: str) -> AnswerT:
    """Ask `model` for one `schema` answer: LangChain's `with_structured_output` by function calling (the tool is
    forced; the default json_schema method is not served by every OpenAI-compatible endpoint). A ModelAnswerError
    naming `what` (an `N_` message id) when the model answered in prose, with nothing, or with arguments that are
    not JSON or not the schema. The call is an ordinary model call: callbacks (the eval meter) see it."""
    return invoke_structured_with_raw(model, messages, schema, what)[0]


def invoke_structured_with_raw(model: BaseChatModel, messages: Sequence[BaseMessage], schema: type[AnswerT],
                               what: str) -> tuple[AnswerT, AIMessage]:
    """`invoke_structured`, and the model's own message (its usage: what a budget counts)."""
    runnable = model.with_structured_output(schema, method="function_calling", include_raw=True)
    out = runnable.invoke(list(messages))
    if not isinstance(out, dict):  # include_raw=True: always {"raw", "parsed", "parsing_error"}
        raise TypeError(f"with_structured_output(include_raw=True) returned {type(out).__name__}")
    parsed, error, raw = out.get("parsed"), out.get("parsing_error"), out.get("raw")
    if isinstance(parsed, schema) and isinstance(raw, AIMessage):
        return parsed, raw
    broken = raw.invalid_tool_calls if isinstance(raw, AIMessage) else []
    if error is not None or broken:
        raise ModelAnswerError(_("its JSON {what} is broken ({detail})").format(
            what=_(what), detail=_broken_detail(error, broken))) from error
    text = message_text(raw) if isinstance(raw, AIMessage) else ""
    if not text.strip():
        raise ModelAnswerError(_("it gave an empty answer instead of the JSON {what}").format(what=_(what)))
    start = " ".join(text.split())[:80]
    raise ModelAnswerError(_('it replied in prose instead of the JSON {what} ("{start}")').format(
        what=_(what), start=start))


def _broken_detail(error: BaseException | None, broken: Sequence[InvalidToolCall]) -> str:
    """What is wrong with a structured answer's arguments, in a few words: the JSON error, or the fields the schema
    refused."""
    for call in broken:
        try:
            json.loads(call.get("args") or "")
        except ValueError as exc:
            return str(exc)
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(part) for part in e['loc']) or '-'}: {e['msg']}" for e in error.errors()[:3])
    if error is not None:
        return " ".join(str(error).split())[:160]
    return str(broken[0].get("error") or "")[:160] if broken else ""


def agent_json_answer(messages: Sequence[AnyMessage], what: str, tools: Collection[str]) -> dict[str, Any]:
    """The JSON object in an agent run's last answer (see `parse_json_answer`); when the run ended on a tool call
    that could not be made (an unknown tool, arguments that are not JSON), a ModelAnswerError naming it."""
    last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    broken = last.invalid_tool_calls if last is not None else []
    if broken:
        name = str(broken[0].get("name") or "")
        if name not in tools:
            raise ModelAnswerError(_("it called a tool that does not exist: {name}, with arguments that are not "
                                     "valid JSON, instead of answering with the JSON {what}").format(
                                         name=name or _("(no name)"), what=_(what)))
        raise ModelAnswerError(_("it called {name} with arguments that are not valid JSON instead of answering with "
                                 "the JSON {what}").format(name=name, what=_(what)))
    return parse_json_answer(last_ai_text(list(messages)), what)


def describe_model_failure(exc: Exception) -> str:
    """One sentence for the user saying what the model or its endpoint did wrong; logged. The API key the request
    carried, anything after `Bearer ` and every configured secret are masked first: a gateway may echo them."""
    with using("en"):  # the log stays English whatever the thread's language
        log.warning("model failure: %s", _redacted(exc))
    return _redacted(exc)


def _redacted(exc: Exception) -> str:
    request = getattr(exc, "request", None)
    sent = request.headers.get("authorization", "") if isinstance(request, httpx.Request) else ""
    return redact(_describe(exc), sent, sent.partition(" ")[2])


def _describe(exc: Exception) -> str:
    if isinstance(exc, ModelAnswerError):
        return _("The model's answer could not be used: {problem}.").format(problem=exc)
    if isinstance(exc, GraphRecursionError):
        return _("The model did not finish: it kept calling tools until the step limit stopped it.")
    after = _after_retries(exc)
    if isinstance(exc, openai.APITimeoutError):
        return _("The model did not answer within {timeout} (QUANTDESK_LLM_TIMEOUT){after}.").format(
            timeout=_timeout(exc), after=after)
    if isinstance(exc, openai.APIConnectionError):
        return _("The model endpoint {host} could not be reached{after} (check OPENAI_BASE_URL).").format(
            host=_host(exc), after=after)
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return _("The model endpoint refused the API key (HTTP {status}); check OPENAI_API_KEY.").format(
            status=exc.status_code)
    if isinstance(exc, openai.NotFoundError):
        return _("The model endpoint does not serve model {model} (HTTP 404); check QUANTDESK_MODEL, "
                 "QUANTDESK_LIGHT_MODEL and OPENAI_BASE_URL.").format(model=repr(_model(exc)))
    if isinstance(exc, openai.RateLimitError):
        return _("The model endpoint kept answering HTTP 429 (rate limited){after}.").format(after=after)
    if isinstance(exc, openai.APIStatusError):
        return _("The model endpoint returned HTTP {status}{after}{message}.").format(
            status=exc.status_code, after=after, message=_server_message(exc))
    return _("The model endpoint's answer could not be read ({error}).").format(error=type(exc).__name__)


def _after_retries(exc: Exception) -> str:
    """' after N retries', read from the last attempt's request (the OpenAI client counts them there)."""
    request = getattr(exc, "request", None)
    try:
        retries = int(request.headers.get("x-stainless-retry-count", "0")) if request is not None else 0
    except ValueError:
        return ""
    return ngettext(" after {n} retry", " after {n} retries", retries).format(n=retries) if retries else ""


def _timeout(exc: openai.APIError) -> str:
    seconds = exc.request.headers.get("x-stainless-read-timeout")
    try:
        return f"{float(seconds):g} s" if seconds is not None else _("the configured time")
    except ValueError:
        return _("the configured time")


def _host(exc: openai.APIError) -> str:
    return f"{exc.request.url.host}:{exc.request.url.port}" if exc.request.url.port else str(exc.request.url.host)


def _model(exc: openai.APIError) -> str:
    try:
        return str(json.loads(exc.request.content).get("model"))
    except (ValueError, AttributeError):
        return "?"


def _server_message(exc: openai.APIStatusError) -> str:
    """The endpoint's own error message (never for auth errors, whose messages may echo part of the key)."""
    body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    return f" ({' '.join(str(message).split())[:160]})" if message else ""


LANGUAGE_INSTRUCTIONS = {
    "zh-CN": ("\n\n## Language\nWrite everything a person reads (questions, reports, arguments, reasoning, "
              "summaries) in Simplified Chinese, as Chinese A-share quants write: 均线, 金叉/死叉, 夏普比率, 最大回撤, "
              "换手率, 涨停/跌停, T+1, 印花税, 过户费, 佣金. Keep JSON keys, enum values, tool names and arguments, "
              "ts_codes, dates and numbers exactly as specified, and copy every number from the tool results "
              "unchanged."),
    "en": "\n\n## Language\nWrite everything a person reads in English.",
}


def language_instruction() -> str:
    """What a prompt appends so the agent writes its prose in the thread's language (in effect: tools.i18n)."""
    return LANGUAGE_INSTRUCTIONS[current()]
