"""Snapshots recorded from a real control plane, shipped for `diagnose --demo`."""

from __future__ import annotations

import os

DEMO = "statefulset-node-down.json"


def demo_path() -> str:
    return os.path.join(os.path.dirname(__file__), DEMO)
