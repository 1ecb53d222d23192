"""The terminal: its width and the text fitted to it (fit), color where a person reads it,
the cluster's strings made printable, progress on stderr, and a closed pipe ended quietly."""
