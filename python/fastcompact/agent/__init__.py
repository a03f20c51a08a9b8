"""What the agent runs: the middleware, its reading of the graph state, and the steps
of a compaction, as plain functions over a :class:`~fastcompact.agent.setup.Setup`.

Who owns what:

- ``middleware``: ``CompactionMiddleware``, one model call from reading to response;
  ``tools``, ``recall_tool``, ``factories`` and ``keywords``: what it gives the agent
  and the peers' ways of making it.
- ``reading``: a call's reading of the state into a ``Turn``; ``state``: what the graph
  state holds and the index arithmetic; ``counters``: the ``_fastcompact`` record, and
  the only place its fields change.
- ``schedule``: when the price model says a compaction pays; ``drafting``: where the cut
  falls and what replaces the span; ``compaction``: carrying one out; ``commit``:
  whether it commits and the event it leaves; ``fitting``: what is sent to fit the window.
- ``memory`` and ``summarize``: the memory and the model summary; ``storage`` and
  ``media``: the archive, restored files and media through the backend.
- ``setup``: the config, models and backend a middleware works with; ``steps``: logic
  written once for the sync and the async paths.
"""
