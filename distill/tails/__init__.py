"""The read side: which transcripts there are, how far each was read, and the batches cut
from their new tails.

- ``state``: every path under the state directory (``settings.state``);
- ``discover``: the transcripts under the configured roots, and whose each one is;
- ``cursor``: how far each file was read and committed, known by device + inode;
- ``reader``: the new complete lines of each file and the turns in them (``dry_walks`` for
  ``backfill --dry-run``);
- ``ledger``: a batch's life — create, commit, abort, pending, prune — under the state lock;
- ``startpoint`` (``distill init``) and ``status`` (``distill status``, read-only).

Nothing here imports the distiller, the store or an LLM client.
"""
