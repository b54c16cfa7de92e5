"""manifest.yml declares what the code uses: every event the Bolt listeners take is subscribed, the Home tab is on
(the app publishes Homes), and each scope the README's feature table names is requested."""

from __future__ import annotations

import re

import yaml

from testkit.paths import REPO

MESSAGE_EVENTS = {"message.channels", "message.groups", "message.im"}  # `message` in a channel, group or DM


def _manifest() -> dict:
    return yaml.safe_load((REPO / "manifest.yml").read_text())


def _listened_events() -> set[str]:
    sources = "\n".join(p.read_text() for p in (REPO / "bot" / "slack" / "listeners").glob("*.py"))
    return set(re.findall(r'@app\.event\("(\w+)"', sources))


def test_every_listened_event_is_subscribed() -> None:
    subscribed = set(_manifest()["settings"]["event_subscriptions"]["bot_events"])
    listened = _listened_events()
    assert "app_home_opened" in listened  # the scan finds the listeners
    for event in listened:
        assert (subscribed >= MESSAGE_EVENTS) if event == "message" else event in subscribed, event


def test_the_home_tab_is_enabled() -> None:
    assert _manifest()["features"]["app_home"]["home_tab_enabled"] is True


def test_the_readme_names_a_requested_scope_for_each_feature() -> None:
    scopes = set(_manifest()["oauth_config"]["scopes"]["bot"])
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("| feature | scopes"):].split("\n\n")[0]
    named = set(re.findall(r"`([a-z_.]+:[a-z_.]+)`", table))
    assert named and named <= scopes, named - scopes
