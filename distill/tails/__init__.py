"""The read side: the state directory, discovery, cursor, reader, batch ledger, init and status."""
