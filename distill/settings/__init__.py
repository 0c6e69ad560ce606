"""Settings: one precedence implementation (:mod:`.core`, standard library only), from which
the full model (:class:`distill.config.Settings`) and the hook's slice (:mod:`.hook`) are built.
This package imports nothing itself, so the hook's fast path (``distill enqueue``) stays in the
standard library.
"""
