"""distill: turn agent session transcripts into a shared, deduplicated long-term memory."""

__version__ = "0.1.0"
