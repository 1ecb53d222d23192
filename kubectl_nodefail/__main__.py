"""Allows `python -m kubectl_nodefail`."""

from kubectl_nodefail.cli.main import main

main()
