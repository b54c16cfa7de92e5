"""The background service's witness of the audit chains' heads (tools/audit/witness.py): each pass appends every
new head to QUANTDESK_AUDIT_WITNESS_FILE and posts it to QUANTDESK_AUDIT_CHANNEL, one keyed post per head in that
day's thread (a post row first, so a refused post is posted again and none twice)."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from bot.core.core import Core
from bot.core.surface import Refused, ThreadStart
from tools.audit.witness import WitnessFile, current_heads, line
from tools.i18n import _

log = logging.getLogger(__name__)


class HeadWitness:
    def __init__(self, core: Core, file: Path | None, channel: str = "") -> None:
        """`file`: the witness file (None: none); `channel`: the Slack channel id heads are posted to ('': none)."""
        self.core, self.channel = core, channel
        self.file = WitnessFile(file) if file is not None else None
        self._posted: dict[str, int] = {}  # chain -> the last seq this process saw recorded as a post
        self._days: dict[date, str] = {}  # day -> its thread's id

    @property
    def active(self) -> bool:
        return self.file is not None or bool(self.channel)

    def publish(self) -> None:
        """Publish the heads that changed since the last pass."""
        heads = current_heads(self.core.queue.engine)
        if self.file is not None:
            written = self.file.publish(heads)
            if written:
                log.info("witnessed %d audit head(s) in %s", written, self.file.path)
        if self.channel:
            for head in heads:
                if head["seq"] > self._posted.get(head["chain"], 0):
                    self._post(head)

    def _post(self, head: dict[str, Any]) -> None:
        """Post one head into its day's thread (its key: chain and seq, so it is posted once)."""
        thread_id = self._day_thread(datetime.now(UTC).date())
        text = _("Audit head {chain} #{seq}").format(chain=head["chain"], seq=head["seq"])
        self.core.notify(thread_id, f"audit-head:{head['chain']}:{head['seq']}", f"{text}\n```{line(head)}```")
        self._posted[head["chain"]] = head["seq"]

    def _day_thread(self, day: date) -> str:
        """The thread of the day's heads in the channel, rooted once (found again by its marker after a restart)."""
        if day not in self._days:
            since = datetime.combine(day, time(), UTC).timestamp()
            title = _("Audit chain heads witnessed on {day} (UTC)").format(day=f"{day:%Y-%m-%d}")
            try:
                place = self.core.surface.open_thread(ThreadStart(self.channel, title, f"audit-heads:{day:%Y-%m-%d}",
                                                                  since), again=True)
            except Refused as exc:
                raise RuntimeError(f"could not root the audit heads' thread: {exc.reason}") from exc
            info, _created = self.core.threads.open(place.team, place.channel, place.thread_ts, None)
            self._days[day] = info.thread_id
        return self._days[day]
