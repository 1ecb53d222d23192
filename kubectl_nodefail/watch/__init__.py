"""`diagnose --watch`: the screen redrawn from each fresh diagnosis, and the change log between
two reads."""
