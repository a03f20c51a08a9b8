"""What notebooks and scripts call: counting, cutoffs, the cheap passes, recall and
search, the report."""
