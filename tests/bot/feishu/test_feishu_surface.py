"""The Feishu surface against the fake Open API, in process: a code body too long for its card goes up as a file
beside it; charts go up as images and CSVs as files; a refused post raises Refused and a refused update does not; a
thread the background service roots twice with the same marker is one root; a private note in a one-to-one chat is a
reply there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.cards import card_of
from bot.core.surface import Place, Question, Refused, Status, StoredFile, ThreadStart
from bot.feishu.client import FeishuClient
from bot.feishu.render import CODE_INLINE_MAX
from bot.feishu.surface import FeishuSurface
from bot.surfaces import FEISHU_TEAM
from graphs.interrupts import code_review_request
from testkit.fakes.feishu_server import Fault, FeishuServer
from testkit.feishu import APP_ID, APP_SECRET, new_id
from tools.settings import Settings


@pytest.fixture
def served() -> Iterator[tuple[FeishuServer, FeishuSurface]]:
    with FeishuServer() as server:
        settings = Settings(_env_file=None, FEISHU_APP_ID=APP_ID, FEISHU_APP_SECRET=APP_SECRET,
                            FEISHU_DOMAIN=server.url)
        yield server, FeishuSurface(FeishuClient(settings))


def _place(chat: str = "oc_surface") -> Place:
    return Place(FEISHU_TEAM, chat, new_id(), "ou_alice")


def test_a_long_code_body_goes_up_as_a_file_beside_its_card(served: tuple[FeishuServer, FeishuSurface]) -> None:
    server, surface = served
    code = "x = close.shift(1)\n" * (CODE_INLINE_MAX // 10)
    card = card_of(code_review_request("long_one", code, "", "summary", None, ["approve", "edit", "reject"], "basic"))
    place = _place()
    surface.post(place, Question(place.thread_id, "i-1", card, "ou_alice"), key="i-1")
    (upload,) = server.fake.of("im.file.create")
    assert upload.args["file_name"] == "long_one.py" and upload.args["file"] == code.encode()
    kinds = [c.args["msg_type"] for c in server.fake.thread(place.thread_ts)]
    assert kinds == ["interactive", "file"]


def test_charts_are_images_and_csvs_are_files(served: tuple[FeishuServer, FeishuSurface]) -> None:
    server, surface = served
    place = _place()
    surface.upload(place, [StoredFile("chart", b"\x89PNG fake", "chart.png", "Chart"),
                           StoredFile("signal_csv", b"date,value\n", "signal.csv", "Signal")])
    assert [c.args["image_type"] for c in server.fake.of("im.image.create")] == ["message"]
    assert [c.args["file_name"] for c in server.fake.of("im.file.create")] == ["signal.csv"]
    assert [c.args["msg_type"] for c in server.fake.thread(place.thread_ts)] == ["image", "file"]


def test_a_refused_post_raises_and_a_refused_update_does_not(served: tuple[FeishuServer, FeishuSurface]) -> None:
    server, surface = served
    place = _place()
    server.fake.inject("im.message.reply", Fault.api_error(230002, "bot is not in the chat"))
    with pytest.raises(Refused, match="230002"):
        surface.post(place, Status(place.thread_id, "working"))
    server.fake.inject("im.message.patch", Fault.server_error())
    surface.update(place, "om_gone", Status(place.thread_id, "done", running=False))
    assert [c.fault is not None for c in server.fake.of("im.message.patch")] == [True]


def test_a_thread_rooted_twice_with_one_marker_is_one_root(served: tuple[FeishuServer, FeishuSurface]) -> None:
    server, surface = served
    start = ThreadStart("oc_rules", ":bell: rule ou_alice/momo ran", "exec-1", users=["ou_alice"])
    first, again = surface.open_thread(start, again=False), surface.open_thread(start, again=True)
    assert first == again and first.team == FEISHU_TEAM and first.thread_id.startswith("feishu-")
    sent = server.fake.of("im.message.create")
    assert len(sent) == 2 and sent[0].args["uuid"] == sent[1].args["uuid"]
    assert '<at user_id=\\"ou_alice\\"></at>' in sent[0].args["content"] and "🔔" in sent[0].args["content"]


def test_a_private_note_in_a_one_to_one_chat_is_a_reply(served: tuple[FeishuServer, FeishuSurface]) -> None:
    server, surface = served
    group, direct = _place("oc_group"), _place("oc_direct")
    surface.chat_types["oc_direct"] = "p2p"
    surface.tell(group, "only you")
    surface.tell(direct, "only you")
    assert [c.args["chat_id"] for c in server.fake.of("ephemeral.send")] == ["oc_group"]
    assert len(server.fake.thread(direct.thread_ts)) == 1
    assert surface.locale("ou_alice") is None
