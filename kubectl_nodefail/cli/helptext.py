"""The texts of the command line's help: each command's one-line summary, the examples and
notes under a command's options (its epilog), and the exit codes under the top-level --help."""

from __future__ import annotations

from kubectl_nodefail.common import exitcodes

# Each command's summary: its short_help, and its row in `kubectl nodefail --help`, which lists
# the commands from here without importing them (main.py).
SUMMARIES = {
    "completion": "A shell completion script (bash, zsh, fish, kubectl).",
    "diagnose": "Explain failed nodes and stuck pods, by controller type.",
    "dump": "Save what diagnose reads as one JSON file, for offline use.",
    "rbac": "Print the least-privilege RBAC roles, as YAML.",
    "remediate": "Plan the safe fix for failed nodes; --confirm carries it out.",
    "version": "The plugin's version and the server's Kubernetes version.",
}
STRATEGY_HELP = """
\b
Strategies (the destructive step a node confirmed down gets; default auto):
  auto            the out-of-service taint where the server supports it (1.28+),
                  else force-delete
  out-of-service  taint node.kubernetes.io/out-of-service=nodeshutdown:NoExecute:
                  Kubernetes force-deletes the node's pods and detaches its volumes at
                  once; remediate removes the taint again once the node is Ready
  force-delete    delete the node's stuck pods with grace 0 and UID/resourceVersion
                  preconditions (DaemonSet and mirror pods excepted)
  delete-node     delete the Node object (machine gone for good); PodGC removes its pods
"""
EXIT_CODES_HELP = exitcodes.help_text()  # every code, once: the top-level --help

DIAGNOSE_EXAMPLES = """
\b
Examples:
  # every failed node and stuck pod of the current context
  kubectl nodefail diagnose
  # one node, and the full reasoning for it (with its incident timeline)
  kubectl nodefail diagnose worker-3 --explain worker-3
  # why one pod is stuck
  kubectl nodefail diagnose --explain shop/db-0
  # for a runbook: branch on the exit code (3 = problems found), read the JSON
  kubectl nodefail diagnose -o json | jq '.nodes[].cause.code'
  # another cluster, pods of one namespace only
  kubectl nodefail diagnose --context prod-eu -n shop
  # several clusters at once, grouped; the exit code is the worst of them
  kubectl nodefail diagnose --context prod-eu --context prod-us
  kubectl nodefail diagnose --all-contexts -o json
  # follow the incident live (Ctrl-C stops)
  kubectl nodefail diagnose worker-3 --watch
  # offline: a dump taken earlier (kubectl nodefail dump -f incident.json)
  kubectl nodefail diagnose --from-file incident.json
"""
REMEDIATE_EXAMPLES = """
\b
Examples:
  # the plan for one node (changes nothing)
  kubectl nodefail remediate worker-3
  # once you checked that its machine is powered off (console, power state), type that
  # node's name in place of the placeholder (it is refused as written) and add --confirm
  kubectl nodefail remediate worker-3 --node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>
  # save the plan for review, then run exactly that plan (the attestation typed again)
  kubectl nodefail remediate worker-3 --plan-out plan.json \\
      --node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>
  kubectl nodefail remediate --plan-in plan.json \\
      --node-shutdown-confirmed <NODE-YOU-VERIFIED-IS-POWERED-OFF>
  # a whole zone: its plan; once every machine of zone-b is checked off, type the zone
  # in place of the placeholder, and add --confirm
  kubectl nodefail remediate --zone zone-b
  kubectl nodefail remediate --zone zone-b --allow-disruption \
      --zone-shutdown-confirmed <ZONE-WHOSE-MACHINES-YOU-VERIFIED-ARE-OFF>
"""
DUMP_EXAMPLES = """
\b
Examples:
  kubectl nodefail dump -f incident.json            # everything diagnose reads
  kubectl nodefail dump worker-3 -f worker-3.json   # just what one node's diagnosis needs
  kubectl nodefail diagnose --from-file incident.json
"""
VERSION_EXAMPLES = """
\b
Examples:
  kubectl nodefail version                 # plugin and server version
  kubectl nodefail version --client        # the plugin only, no cluster read
  kubectl nodefail version -o json
"""
COMPLETION_HELP = """Print a shell completion script (bash, zsh, fish, or kubectl's).

\b
Completes commands, options, node names, namespaces and NAMESPACE/POD for --explain, read
from the cluster of the kubeconfig (and --context) typed so far.

\b
For `kubectl nodefail <TAB>` (kubectl 1.26+ asks an executable kubectl_complete-nodefail
on PATH; next to the plugin is a good place):
  kubectl nodefail completion kubectl > ~/.krew/bin/kubectl_complete-nodefail
  chmod +x ~/.krew/bin/kubectl_complete-nodefail
For the kubectl-nodefail command itself (pip users):
  bash:  source <(kubectl nodefail completion bash)    # in ~/.bashrc
  zsh:   source <(kubectl nodefail completion zsh)     # in ~/.zshrc, after compinit
  fish:  kubectl nodefail completion fish | source     # in ~/.config/fish/config.fish
"""
RBAC_EXAMPLES = """
\b
Examples:
  kubectl nodefail rbac diagnose | kubectl apply -f -     # the read-only role
  kubectl nodefail rbac remediate | kubectl apply -f -    # both roles remediate --confirm needs
  kubectl create clusterrolebinding nodefail-diagnose \\
    --clusterrole=kubectl-nodefail-diagnose --user=NAME
"""
