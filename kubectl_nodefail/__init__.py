"""kubectl-nodefail: explain failed Kubernetes nodes and stuck pods, and remediate them safely."""

__version__ = "0.1.0"
