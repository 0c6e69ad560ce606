"""distill-worker: the daemon that serves the task queue.

It watches ``<state>/queue/inbox`` (and, optionally, the transcript roots), claims tasks,
and hands each session file to :func:`distill.pipeline.run_distill`. It owns no
distillation logic: reading, distilling, storing and committing all happen in ``distill``.
"""
