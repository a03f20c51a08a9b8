"""What the agent runs: the middleware, its reading of the graph state, and the steps
of a compaction, as plain functions over a :class:`~fastcompact.agent.setup.Setup`.

A model call is a short pipeline: ``reading`` reads the turn, ``compaction`` says what
to send (compacting first when one is due), ``fitting`` fits it into the window. Each
step takes the turn's data (``state``) and the settings (``setup``), not another step.

Who owns what:

- ``middleware``: ``CompactionMiddleware`` (one model call from reading to response)
  and ``CompactionToolMiddleware`` (the same compaction as a tool);
  ``recall_tool``: the ``recall`` tool, and ``RecallMiddleware`` to give it alone.
- ``reading``: a call's reading of the state into a ``Turn``; ``state``: what the graph
  state holds, a turn's sizes and the index arithmetic; ``counters``: the
  ``_fastcompact`` record, whose methods are the only place its fields change.
- ``compaction``: whether one is due, carrying it out and whether it commits;
  ``summary_call``: the summary asked of the model for a draft, in the agent's own
  request or a prompt of its own;
  ``schedule``: when the price model says it pays and which summarizer costs less;
  ``drafting``: where the cut falls and what replaces the span; ``fitting``: what is
  sent to fit the window.
- ``memory`` and ``summarize``: the memory and the model summary (and the summary
  message's format); ``storage``: the archive, restored files and media through the
  backend.
- ``setup``: the config, models and backend a middleware works with, the peers'
  keywords and where archives go; ``steps``: logic written once for sync and async.
"""
