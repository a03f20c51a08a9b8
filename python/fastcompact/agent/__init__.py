"""What the agent runs: the middleware, its reading of the graph state, and the steps
of a compaction, as plain functions over a :class:`~fastcompact.agent.setup.Setup`."""
