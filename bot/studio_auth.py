"""Who calls LangGraph Agent Server (`langgraph dev`, Studio, langgraph-sdk): the `auth` handler `langgraph.json`
names. Every request must carry `Authorization: Bearer <token>`; the token maps to a Slack user id, which the
server puts in `configurable.langgraph_auth_user_id` of every run. `graphs.context.decider` reads only that, so
the order workflow's policy node checks the Slack user against `QUANTDESK_TRADERS` exactly as for Slack.

Tokens are configured as `QUANTDESK_STUDIO_TOKENS`: comma-separated `SLACK_USER_ID:SHA256_HEX` entries, the
SHA-256 of each token, never the token itself (a leaked `.env` or environment dump opens nothing). Tokens are
random (`python -m bot.studio_auth U012ABCDEF` makes one and prints its entry), at least 32 characters, so an
unsalted hash suffices. A missing, short or unknown token is a 401; no token is ever logged or echoed.

Authorization (`@auth.on`): deny by default. Threads (and their runs, state and interrupts) belong to the caller
who created them (`metadata.owner`): nobody reads, resumes or decides another caller's thread. The assistants
`langgraph.json` serves can be read by every caller but not changed; crons and the store are refused (QuantDesk
uses neither)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sys
from functools import lru_cache
from typing import Any

from langgraph_sdk import Auth

from tools.settings import get_settings

MIN_TOKEN_LENGTH = 32
OWNER = "owner"  # the thread metadata key naming the caller who created it
_USER = re.compile(r"[A-Za-z0-9._-]+")
_DIGEST = re.compile(r"[0-9a-f]{64}")

auth = Auth()


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@lru_cache(maxsize=4)
def token_users(raw: str) -> tuple[tuple[str, str], ...]:
    """`QUANTDESK_STUDIO_TOKENS` parsed into (digest, Slack user id) pairs. Errors name the entry by position,
    never its value."""
    pairs: dict[str, str] = {}
    for n, entry in enumerate((e.strip() for e in raw.split(",")), 1):
        if not entry:
            continue
        user, sep, digest = (part.strip() for part in entry.partition(":"))
        digest = digest.lower()
        if not sep or not _USER.fullmatch(user):
            raise ValueError(f"QUANTDESK_STUDIO_TOKENS entry {n} is not SLACK_USER_ID:SHA256_HEX")
        if not _DIGEST.fullmatch(digest):
            raise ValueError(f"QUANTDESK_STUDIO_TOKENS entry {n} ({user}) is not the token's SHA-256 (64 hex "
                             "digits); store the hash, never the token: python -m bot.studio_auth " + user)
        if pairs.setdefault(digest, user) != user:
            raise ValueError(f"QUANTDESK_STUDIO_TOKENS entry {n} ({user}) repeats another user's token")
    return tuple(pairs.items())


def user_for(authorization: str | None, configured: tuple[tuple[str, str], ...]) -> str | None:
    """The Slack user id whose token the `Authorization` header carries, or None. Every configured digest is
    compared (in constant time), whichever matches."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or len(token) < MIN_TOKEN_LENGTH:
        return None
    digest, found = token_digest(token), None
    for known, user in configured:
        if hmac.compare_digest(digest, known):
            found = user
    return found


def _unauthorized() -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=401, detail="missing or unknown bearer token",
                                         headers={"WWW-Authenticate": "Bearer"})


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    raw = get_settings().studio_tokens
    user = user_for(authorization, token_users(raw.get_secret_value()) if raw is not None else ())
    if user is None:
        raise _unauthorized()
    return {"identity": user, "display_name": user}


@auth.on
async def deny_by_default(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Whatever no handler below allows: assistant changes, crons, the store, resources added later."""
    return False


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: Any) -> bool | Auth.types.FilterType:
    """A thread (with its runs, state and interrupts) is its creator's: a created thread, or one a run creates,
    is stamped with the caller as owner (which an update cannot change), and every access is filtered by it.
    Nobody may write a thread's state directly: decisions reach a graph only as resumes of its interrupts."""
    metadata = value.get("metadata") if isinstance(value, dict) else None
    if ctx.action == "update" and metadata is None:
        return False  # a write of the thread's state (update_state): it could forge a decision or a verdict
    if ctx.action in ("create", "create_run", "update") and isinstance(metadata, dict):
        metadata[OWNER] = ctx.user.identity  # in place: the server keeps its own reference to this dict
    return {OWNER: ctx.user.identity}


async def read_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The served graphs' assistants: any authenticated caller may list and read them."""
    return None


auth.on.assistants.search(read_assistants)  # registered apart: stacked, the one decorator refused the other's type
auth.on.assistants.read(read_assistants)


def main(argv: list[str]) -> int:
    """`python -m bot.studio_auth SLACK_USER_ID`: a fresh token (shown once; give it to that user) and the
    `QUANTDESK_STUDIO_TOKENS` entry that maps it to them (append it, comma-separated)."""
    if len(argv) != 1 or not _USER.fullmatch(argv[0]):
        print("usage: python -m bot.studio_auth SLACK_USER_ID", file=sys.stderr)
        return 2
    token = secrets.token_urlsafe(32)
    print(f"token (send as 'Authorization: Bearer <token>'; shown once): {token}")
    print(f"QUANTDESK_STUDIO_TOKENS entry: {argv[0]}:{token_digest(token)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
