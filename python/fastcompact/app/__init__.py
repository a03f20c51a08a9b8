"""The programs: the command line, the demo, and the compaction of a saved transcript."""
