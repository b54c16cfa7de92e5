"""Artifacts in the database (issue 12): the store on SQLite and PostgreSQL, its migration, the workflows
storing refs instead of host paths, and a replica on another data directory delivering a run's charts."""

from __future__ import annotations

import io
import json
import uuid
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine, inspect, update

from bot.console.surface import ConsoleSurface, console_place
from bot.core import Place
from bot.core.wiring import build_core
from bot.runner import Runner
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.signal.graph import build_signal_graph
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.artifacts import Artifact, ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import current_revision, downgrade, head_revision, upgrade
from tools.storage.models import utcnow

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
REF_KEYS = {"id", "kind", "filename", "title", "mime", "size"}


def _put(store: ArtifactStore, thread: str, key: str = "run:1", kind: str = "chart", data: bytes = PNG) -> dict:
    return dict(store.put(thread, key, kind, f"{kind}.bin", f"a {kind}", "image/png", data))


def _age(engine: Engine, artifact_id: str, days: int) -> None:
    with engine.begin() as conn:
        conn.execute(update(Artifact).where(Artifact.id == artifact_id).values(
            created_at=utcnow() - timedelta(days=days)))


# --- the store ------------------------------------------------------------------------------------------


def test_round_trip_list_and_delete(engine: Engine) -> None:
    store, thread = ArtifactStore(engine), f"t-{uuid.uuid4().hex[:8]}"
    chart = _put(store, thread)
    table = _put(store, thread, kind="metrics_csv", data=b"metric,value\nsharpe,1.5\n")
    assert set(chart) == REF_KEYS and chart["size"] == len(PNG) and chart["filename"] == "chart.bin"
    stored = store.get(chart["id"])
    assert stored is not None and stored.data == PNG and stored.ref == chart and stored.thread_id == thread
    assert stored.mime == "image/png" and stored.title == "a chart"
    assert [r["id"] for r in store.list(thread)] == [chart["id"], table["id"]]
    assert store.list(f"{thread}-other") == []
    assert store.delete([chart["id"], "no-such-id"]) == 1
    assert store.get(chart["id"]) is None and store.list(thread) == [table]
    assert store.delete([]) == 0


def test_the_same_thread_key_and_kind_is_stored_once(engine: Engine) -> None:
    store, thread = ArtifactStore(engine), f"t-{uuid.uuid4().hex[:8]}"
    first = _put(store, thread)
    again = _put(store, thread, data=b"a re-run drew it again")  # a node re-run on resume
    assert again == first and store.get(first["id"]).data == PNG  # the first one stays, nothing is added
    others = [_put(store, thread, key="run:2"), _put(store, thread, kind="ic_csv"),
              _put(store, f"{thread}-b")]  # another run, another kind, another thread: each its own
    assert len({first["id"], *(o["id"] for o in others)}) == 4
    assert len(store.list(thread)) == 3


def test_purge_drops_what_is_older_than_the_retention(engine: Engine) -> None:
    store, thread = ArtifactStore(engine), f"t-{uuid.uuid4().hex[:8]}"
    old, recent = _put(store, thread, key="old"), _put(store, thread, key="recent")
    _age(engine, old["id"], 31)
    _age(engine, recent["id"], 29)
    assert store.purge(timedelta(days=30)) >= 1
    assert store.get(old["id"]) is None and store.get(recent["id"]) is not None


def test_a_store_with_retention_purges_when_it_stores(engine: Engine) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    keeper = ArtifactStore(engine)  # retention 0: keeps everything
    old = _put(keeper, thread, key="old")
    _age(engine, old["id"], 400)
    _put(keeper, thread, key="new")
    assert keeper.get(old["id"]) is not None
    fresh = _put(ArtifactStore(engine, retention_days=30), thread, key="newer")
    assert keeper.get(old["id"]) is None and keeper.get(fresh["id"]) is not None
    with pytest.raises(ValueError, match="retention_days"):
        ArtifactStore(engine, retention_days=-1)


def test_bad_input_is_refused(engine: Engine) -> None:
    store = ArtifactStore(engine)
    for filename in ("../escape.png", "dir/chart.png", "..", "", "chart.png\n"):
        with pytest.raises(ValueError, match="file name"):
            store.put("t", "k", "chart", filename, "t", "image/png", PNG)
    with pytest.raises(ValueError, match="run_key"):
        store.put("t", "k" * 129, "chart", "c.png", "t", "image/png", PNG)
    with pytest.raises(TypeError, match="bytes"):
        store.put("t", "k", "chart", "c.png", "t", "image/png", "text")  # type: ignore[arg-type]


def test_export_writes_the_bytes_under_a_folder(engine: Engine, tmp_path: Path) -> None:
    store = ArtifactStore(engine)
    ref = _put(store, f"t-{uuid.uuid4().hex[:8]}")
    path = store.export(ref["id"], tmp_path / "exports" / "t")
    assert path == tmp_path / "exports" / "t" / "chart.bin" and path.read_bytes() == PNG
    assert store.export("gone", tmp_path) is None


def test_migration_0004_upgrades_and_downgrades(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    downgrade(engine, "0003")
    assert current_revision(engine) == "0003" and "artifacts" not in inspect(engine).get_table_names()
    upgrade(engine, "0004")
    columns = {c["name"]: c for c in inspect(engine).get_columns("artifacts")}
    assert set(columns) == {"id", "thread_id", "run_key", "kind", "filename", "title", "mime", "size", "data",
                            "created_at"}
    expected = "BYTEA" if engine.dialect.name == "postgresql" else "BLOB"
    assert str(columns["data"]["type"]).upper() == expected
    uniques = inspect(engine).get_unique_constraints("artifacts")
    assert [u["column_names"] for u in uniques] == [["thread_id", "run_key", "kind"]]
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    ref = _put(ArtifactStore(engine), "t-migrated")
    assert ArtifactStore(engine).get(ref["id"]).data == PNG
    engine.dispose()


# --- workflows store refs, not paths ----------------------------------------------------------------------


def test_the_signal_report_stores_refs_and_a_re_run_stores_nothing_new(db_url: str, engine: Engine,
                                                                       sandbox: Sandbox) -> None:
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine))
    thread = GraphThread(db_url, ctx, build=build_signal_graph, requester=None)
    result = thread.say("signal ma_cross 600519.SH,000001.SZ 20190101 20200601")["result"]
    refs = result["artifacts"]
    assert [r["kind"] for r in refs] == ["chart", "signal_csv", "signal_parquet", "metrics_csv"]
    assert all(set(r) == REF_KEYS and "/" not in r["filename"] for r in refs)  # no path anywhere
    store = ctx.artifacts
    assert store.get(refs[0]["id"]).data[:8] == PNG[:8]
    parquet = pd.read_parquet(io.BytesIO(store.get(refs[2]["id"]).data))
    pd.testing.assert_frame_equal(parquet, thread.workspace.get("signal/ma_cross"), check_freq=False)
    csv = pd.read_csv(io.BytesIO(store.get(refs[1]["id"]).data), index_col=0, dtype={0: str})
    assert list(csv.columns) == ["600519.SH", "000001.SZ"] and csv.index[0] == "20190102"
    # the report node runs again from the checkpoint before it (as after a crash mid-node): same refs, no copies
    with open_checkpointer(db_url) as saver:
        graph = build_signal_graph(saver)
        before = next(s for s in graph.get_state_history(thread.config) if s.next == ("report",))
        again = graph.invoke(None, before.config, context=ctx)
    assert again["result"]["artifacts"] == refs
    assert len(store.list(thread.thread)) == 4
    # a new request in the same thread is a new run: its own artifacts
    follow = thread.say("fast=10 slow=30")["result"]["artifacts"]
    assert {r["id"] for r in follow}.isdisjoint(r["id"] for r in refs) and len(store.list(thread.thread)) == 8


def test_a_rejected_save_deletes_the_tear_sheet(sqlite_url: str, sandbox: Sandbox) -> None:
    engine = make_engine(sqlite_url)
    upgrade(engine)
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine))
    first = GraphThread(sqlite_url, ctx)
    first.decide(first.say("factor reversal 20190301 20200601 name=orig"), {"type": "approve"})
    twin = GraphThread(sqlite_url, ctx)
    out = twin.decide(twin.say("factor reversal window=5 20190301 20200601 name=twin"), {"type": "approve"})
    assert out["__interrupt__"][0].value["type"] == "approval"
    assert sorted(r["kind"] for r in ctx.artifacts.list(twin.thread)) == ["chart", "ic_csv", "metrics_csv"]
    done = twin.decide(out, {"type": "reject", "message": "we have it"})
    assert "Not saved" in done["final_reply"] and ctx.artifacts.list(twin.thread) == []
    assert len(ctx.artifacts.list(first.thread)) == 3  # the saved factor keeps its own


# --- a replica on another data directory ------------------------------------------------------------------


def _app(url: str, data_dir: Path, slack_url: str):  # noqa: ANN202
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(data_dir),
                        QUANTDESK_DATA_PROVIDER="sample", OPENAI_API_KEY=None, OPENAI_BASE_URL=None,
                        SLACK_BOT_TOKEN="xoxb-test-token", SLACK_SIGNING_SECRET="secret", SLACK_API_URL=slack_url)
    return build_context(settings)


def test_a_replica_on_another_data_dir_delivers_the_charts_of_a_run_it_did_not_draw(tmp_path: Path) -> None:
    """Host A evaluates a factor and pauses on the save approval; host B (other data dir, same database)
    takes the approval, finishes the run, uploads the tear sheet A drew to Slack and exports it in its console,
    all from the database; a failed upload names no path."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    host_a, host_b = tmp_path / "host_a", tmp_path / "host_b"
    with SlackServer() as slack:
        app_a, app_b = _app(url, host_a, slack.url), _app(url, host_b, slack.url)
        with open_checkpointer(url) as saver:
            runner_a = Runner(app_a, saver)
            first = runner_a.start("orig-thread", "factor reversal 20190301 20200601 name=orig", user="UALICE")
            runner_a.resume("orig-thread", first.interrupts[0].id, {"type": "approve"}, "UALICE")
            review = runner_a.start("twin-thread", "factor reversal window=5 20190301 20200601 name=twin",
                                    user="UALICE")
            approval = runner_a.resume("twin-thread", review.interrupts[0].id, {"type": "approve"}, "UALICE")
        assert approval.status == "waiting" and approval.interrupts[0].card.kind == "approval"
        drawn = {r["kind"]: r for r in ArtifactStore(app_a.engine).list("twin-thread")}
        assert set(drawn) == {"chart", "metrics_csv", "ic_csv"}

        with open_checkpointer(url) as saver:
            core = slack_core(app_b, saver)
            done = core.runner.resume("twin-thread", approval.interrupts[0].id, {"type": "approve"}, "UALICE")
            assert done.status == "done" and [r["id"] for r in done.result["artifacts"]] == [
                drawn[k]["id"] for k in ("chart", "metrics_csv", "ic_csv")]
            where = Place(TEAM, "C1", "1800000000.000100", "UALICE")
            core.outbox.upload(where, done.result["artifacts"])
            complete = slack.fake.wait_for("files.completeUploadExternal")[0]
            files = complete.args["files"]
            files = json.loads(files) if isinstance(files, str) else files
            uploads = {c.args["file_id"]: c.body for c in slack.fake.of("upload")}
            store = core.runner.context.artifacts
            stored = {r["filename"]: store.get(r["id"]).data for r in drawn.values()}
            assert {f["title"] for f in files} == {r["title"] for r in drawn.values()}
            assert sorted(uploads[f["id"]] for f in files) == sorted(stored.values())
            slack.fake.fail_uploads = True
            core.outbox.upload(where, done.result["artifacts"])
            note = slack.fake.wait_for("chat.postMessage", where=lambda c: "could not upload" in c.args["text"])[0]
            assert "kept" in note.args["text"] and str(tmp_path) not in note.args["text"]
            assert all(name in note.args["text"] for name in stored)
            out = io.StringIO()
            console = build_core(app_b, saver, ConsoleSurface(out, app_b.settings.data_dir / "exports"), "console-")
            here = console_place("UALICE")
            console.outbox.upload(here, done.result["artifacts"])
    saved = dict(line.strip().removeprefix("saved ").split(": ", 1) for line in out.getvalue().splitlines()
                 if line.startswith("  saved "))
    assert set(saved) == {"chart", "metrics_csv", "ic_csv"}
    for kind, path in saved.items():
        assert Path(path).parent == host_b / "exports" / here.thread_id
        assert Path(path).read_bytes() == stored[drawn[kind]["filename"]]
    assert Path(saved["chart"]).read_bytes()[:8] == PNG[:8]
    written = [p for p in host_a.rglob("*") if p.suffix in (".png", ".csv", ".parquet")]
    assert written == []  # host A drew the charts but wrote nothing to its disk
