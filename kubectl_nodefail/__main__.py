"""Allows `python -m kubectl_nodefail`."""

from kubectl_nodefail.cli import main

main()
