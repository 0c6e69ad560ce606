"""What happens to a turn's text: runtime envelopes (``envelopes``), injected blocks, noise and
clipping (``noise``), and secret redaction (``redact``)."""
