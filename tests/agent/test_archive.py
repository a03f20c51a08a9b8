"""Archive files: never shared between conversations, never overwritten, and failures
warned about the way users filter on; and which files a compaction restores."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import FileDownloadResponse
from fastcompact import CompactionMiddleware
from fastcompact.agent import steps, storage, summarize
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.scripted import ScriptedChatModel, is_summary_call


class BlindBackend(FilesystemBackend):
    """A filesystem backend whose existence check always says not-found (and whose
    writes overwrite, as `FilesystemBackend`'s do)."""

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return [FileDownloadResponse(path=p, content=None, error="file_not_found") for p in paths]


def _history(project: str, steps: int) -> list[Any]:
    """A conversation that already did `steps` steps of a project, as a client sends it."""
    model = ScriptedChatModel()
    out: list[Any] = []
    for step in range(1, steps + 1):
        out.append(HumanMessage(f"Please do step {step} for project {project}."))
        while True:
            reply = model.script(out)
            out.append(reply)
            if not reply.tool_calls:
                break
            from langchain_core.messages import ToolMessage

            out += [ToolMessage(f"ok {project} {c['id']}", tool_call_id=c["id"]) for c in reply.tool_calls]
    return out


def test_two_conversations_without_a_thread_id_never_share_an_archive(tmp_path: Path):
    backend = BlindBackend(root_dir=tmp_path, virtual_mode=True)
    model = ScriptedChatModel(profile={"max_input_tokens": 6_000})
    agent = create_deep_agent(
        model=model, backend=backend, middleware=[CompactionMiddleware(backend=backend)]
    )
    for project in ("alpha", "beta"):
        # No checkpointer, no thread id: the client sends the whole conversation.
        agent.invoke(
            {"messages": [*_history(project, 12), HumanMessage(f"Please do step 13 for project {project}.")]}
        )
    files = sorted((tmp_path / "conversation_history").rglob("*.md"))
    folders: dict[Path, str] = {}
    for f in files:
        folders[f.parent] = folders.get(f.parent, "") + f.read_text()
    # One folder a conversation (a session id kept in its state), each holding only
    # its own messages, so neither overwrote the other.
    assert len(folders) == 2, files
    assert sorted("project alpha" in t and "project beta" not in t for t in folders.values()) == [False, True]
    assert sorted("project beta" in t and "project alpha" not in t for t in folders.values()) == [False, True]


class SlowBackend(FilesystemBackend):
    """A filesystem backend whose async writes take a while, recording when each archive
    write ran."""

    def __init__(self, *args: Any, log: list[tuple[str, float, float]], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.log = log

    async def awrite(self, file_path: str, content: str) -> Any:
        start = time.perf_counter()
        await asyncio.sleep(0.3)
        result = super().write(file_path, content)
        # Notes cut for space are written once the summary is in, by necessity.
        if file_path.startswith("/conversation_history/") and not file_path.endswith(".notes.md"):
            self.log.append(("archive", start, time.perf_counter()))
        return result


class SlowSummaries(ScriptedChatModel):
    """Summaries that take a while, recording when each ran."""

    # Shared with the backend's (a list field would be copied on validation).
    log: Any = None

    async def _agenerate(
        self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        start = time.perf_counter()
        summary = is_summary_call(run_manager)
        if summary:
            await asyncio.sleep(0.3)
        result = self._generate(messages, stop, run_manager, **kw)
        if summary:
            self.log.append(("summary", start, time.perf_counter()))
        return result


def test_the_async_archive_write_and_summary_overlap(tmp_path: Path):
    log: list[tuple[str, float, float]] = []
    backend = SlowBackend(root_dir=tmp_path, virtual_mode=True, log=log)
    model = SlowSummaries(profile={"max_input_tokens": 6_000}, log=log)
    agent = create_deep_agent(
        model=model,
        backend=backend,
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )

    async def run() -> None:
        for step in range(1, 12):
            cfg = {"configurable": {"thread_id": "slow"}}
            await agent.ainvoke({"messages": [HumanMessage(f"Please do step {step} for project slow.")]}, cfg)

    asyncio.run(run())
    writes = [(s, e) for kind, s, e in log if kind == "archive"]
    summaries = [(s, e) for kind, s, e in log if kind == "summary"]
    assert writes and summaries
    # Each archive write ran while a summary call was under way (overlap, not speed).
    for ws, we in writes:
        assert any(ss < we and ws < se for ss, se in summaries), (writes, summaries)


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _media_run(backend: FilesystemBackend, *, run_async: bool = False) -> None:
    model = ScriptedChatModel(profile={"max_input_tokens": 8_000})
    agent = create_deep_agent(
        model=model,
        backend=backend,
        middleware=[CompactionMiddleware(backend=backend)],
        checkpointer=InMemorySaver(),
    )
    cfg = {"configurable": {"thread_id": "m"}}
    image = {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"}
    for step in range(1, 14):
        blocks: list[Any] = [{"type": "text", "text": f"Please do step {step}."}]
        if step <= 2:
            # The same picture twice (one file), and a picture by URL.
            blocks += [image, {"type": "image", "url": "https://example.org/cat.png"}]
        given = {"messages": [HumanMessage(content=blocks)]}
        if run_async:
            asyncio.run(agent.ainvoke(given, cfg))
        else:
            agent.invoke(given, cfg)
    assert agent.get_state(cfg).values["_summarization_event"] is not None


def test_inline_media_is_saved_beside_the_archive_and_urls_stay(tmp_path: Path):
    _media_run(FilesystemBackend(root_dir=tmp_path, virtual_mode=True))
    folder = tmp_path / "conversation_history" / "m"
    saved = list((tmp_path / "conversation_history" / "media").iterdir())
    assert [p.read_bytes() for p in saved] == [PNG]
    assert saved[0].name.endswith(".png")
    archive = "\n".join(p.read_text() for p in folder.glob("*.md"))
    reference = f'<image url="/conversation_history/media/{saved[0].name}" />'
    assert archive.count(reference) == 2
    assert archive.count('<image url="https://example.org/cat.png" />') == 2


class NoUploads(FilesystemBackend):
    def upload_files(self, files: list[tuple[str, bytes]]) -> list[Any]:
        from deepagents.backends.protocol import FileUploadResponse

        return [FileUploadResponse(path=p, error="permission_denied") for p, _ in files]


class AsyncUploads(FilesystemBackend):
    """Uploads only through its async method, counting them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.uploads: list[str] = []

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[Any]:
        from deepagents.backends.protocol import FileUploadResponse

        return [FileUploadResponse(path=p, error="a sync upload in an async run") for p, _ in files]

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[Any]:
        self.uploads += [p for p, _ in files]
        return await asyncio.to_thread(FilesystemBackend.upload_files, self, files)


def test_an_async_run_saves_media_through_the_backends_async_upload_once_a_file(tmp_path: Path):
    backend = AsyncUploads(root_dir=tmp_path, virtual_mode=True)
    _media_run(backend, run_async=True)
    saved = list((tmp_path / "conversation_history" / "media").iterdir())
    assert [p.read_bytes() for p in saved] == [PNG]
    # The picture is in two messages, in the summary's span and in the archive: one write.
    assert backend.uploads == [f"/conversation_history/media/{saved[0].name}"]
    archive = "\n".join(p.read_text() for p in (tmp_path / "conversation_history" / "m").glob("*.md"))
    assert archive.count(f'<image url="/conversation_history/media/{saved[0].name}" />') == 2


def test_media_that_cannot_be_saved_leaves_a_placeholder_and_the_archive(tmp_path: Path):
    _media_run(NoUploads(root_dir=tmp_path, virtual_mode=True))
    archive = "\n".join(p.read_text() for p in (tmp_path / "conversation_history" / "m").glob("*.md"))
    placeholder = (
        f'<image error="failed_to_offload" mime="image/png" bytes="{len(PNG)}" reason="permission_denied" />'
    )
    assert placeholder in archive
    assert "Please do step 1." in archive


def _reads(paths: list[list[str]], tool: str = "read_file") -> list[Any]:
    """An AI message per list, calling `tool` on each of its paths."""
    calls = [
        [{"name": tool, "args": {"file_path": p}, "id": f"c{i}-{k}"} for k, p in enumerate(ps)]
        for i, ps in enumerate(paths)
    ]
    return [AIMessage("", tool_calls=c) for c in calls]


_paths = st.lists(st.lists(st.sampled_from(["/a", "/b", "/c", "/d", "/e", "/f"]), max_size=3), max_size=12)


@given(summarized=_paths, kept=_paths, limit=st.integers(0, 7))
def test_the_files_restored_are_the_newest_distinct_reads_not_still_in_view(
    summarized: list[list[str]], kept: list[list[str]], limit: int
):
    in_view = {p for ps in kept for p in ps}
    newest_first = [p for ps in reversed(summarized) for p in reversed(ps) if p not in in_view]
    expected = list(dict.fromkeys(newest_first))[:limit]
    found = storage.recent_reads(_reads(summarized), _reads(kept), limit)
    assert [r.path for r in found] == expected


def test_only_reads_are_restored():
    span = [*_reads([["/a"]]), *_reads([["/b"]], tool="write_file"), HumanMessage("hi")]
    assert [r.path for r in storage.recent_reads(span, [], 5)] == ["/a"]


def test_a_paged_file_is_restored_at_the_part_read_last(tmp_path: Path):
    """An agent that paged through a file (offsets 314, 588, 862) gets back the last
    part it read, as the file is now, not the file's head."""
    lines = [f"line {i}: " + "text " * 8 for i in range(1, 1201)]
    (tmp_path / "big.py").write_text("\n".join(lines))
    span = [
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "read_file",
                    "args": {"file_path": "/big.py", "offset": at, "limit": 100},
                    "id": f"r{at}",
                }
            ],
        )
        for at in (314, 588, 862)
    ]
    [read] = storage.recent_reads(span, [], 5)
    assert read == storage.Read("/big.py", 862, 100)
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    [restored] = steps.run(storage.restore_files(backend, [read], 50_000, 50_000))
    assert restored.lines == "863-962"
    assert "line 863: " in restored.text and "line 962: " in restored.text
    assert "line 1: " not in restored.text and "line 963: " not in restored.text
    block = summarize.summary_message("notes", file_path=None, restored_files=[restored]).content
    assert '<file path="/big.py" lines="863-962">\nline 863: ' in block
