"""Batch → memories: chunk the turns per agent, map each chunk to candidates (an LLM or the
offline rules extractor, :mod:`.extract`), validate every candidate on its own, reduce to a few per run.

``distill.pipeline`` wires this to batches and the store; nothing here touches the cursor.
"""
