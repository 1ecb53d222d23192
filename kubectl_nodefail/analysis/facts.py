"""Names and defaults of Kubernetes itself that the analysis relies on (see the reference doc)."""

TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
# the node lifecycle controller's own NoExecute taints on a node not Ready
LIFECYCLE_TAINTS = (TAINT_UNREACHABLE, TAINT_NOT_READY)
TAINT_CLOUD_SHUTDOWN = "node.cloudprovider.kubernetes.io/shutdown"

LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"
LABEL_EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
LABEL_HOSTNAME = "kubernetes.io/hostname"

ANNOTATION_MIRROR = "kubernetes.io/config.mirror"
# Written by `remediate` with the out-of-service taint: who attested the shutdown, and when.
ANNOTATION_TAINTED_BY = "kubectl-nodefail.io/out-of-service-by"

NODE_LEASE_NAMESPACE = "kube-node-lease"
# kube-controller-manager's leader election Lease (--leader-elect-resource-namespace/-name
# defaults). Its spec.acquireTime is when the leader of the moment took over: the controllers'
# in-memory timers (eviction counts, the force-detach wait, the node grace) started then.
CONTROLLER_LEASE_NAMESPACE = "kube-system"
CONTROLLER_LEASE_NAME = "kube-controller-manager"
REASON_NODE_NEVER_UPDATED = "NodeStatusNeverUpdated"
REASON_NODE_LOST = "NodeLost"  # pod status.reason set by the node controller up to 1.26

# kube-controller-manager and kubelet defaults; a cluster may run with other values.
DEFAULT_LEASE_SECONDS = 40  # kubelet's nodeLeaseDurationSeconds
UNHEALTHY_ZONE_THRESHOLD = 0.55
# The node lifecycle controller's zone states (ComputeZoneState)
ZONE_NORMAL, ZONE_PARTIAL, ZONE_FULL = "Normal", "PartialDisruption", "FullDisruption"
LARGE_CLUSTER_SIZE_THRESHOLD = 50
NODE_EVICTION_RATE = 0.1
SECONDARY_NODE_EVICTION_RATE = 0.01
FORCE_DETACH_SECONDS = 6 * 60  # attach-detach controller's maxWaitForUnmountDuration
# kube-controller-manager --disable-force-detach-on-timeout: in v1.30.0's
# cmd/kube-controller-manager/app/options/attachdetachcontroller.go, not in v1.29.0's.
DISABLE_FORCE_DETACH_FLAG_MINOR = 30
OUT_OF_SERVICE_GA_MINOR = 28  # non-graceful node shutdown: GA in 1.28 (beta 1.26)

# What changed between minors (analysis/versions.py turns these into the applied behaviour).
OUT_OF_SERVICE_BETA_MINOR = 26  # NodeOutOfServiceVolumeDetach beta, on by default
NODE_LOST_REMOVED_MINOR = 27  # --enable-taint-manager removed: no more NodeLost pods
NODE_MONITOR_GRACE_50S_MINOR = 32  # node-monitor-grace-period default 40s -> 50s
NODE_MONITOR_GRACE_SECONDS = 50
NODE_MONITOR_GRACE_SECONDS_BEFORE_1_32 = 40

# Conditions the kubelet or node-problem-detector set where True means trouble.
KUBELET_PROBLEM_CONDITIONS = {"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}
NPD_PROBLEM_CONDITIONS = {
    "KernelDeadlock",
    "ReadonlyFilesystem",
    "FrequentKubeletRestart",
    "FrequentContainerdRestart",
    "FrequentDockerRestart",
    "KubeletUnhealthy",
    "ContainerRuntimeUnhealthy",
    "CorruptDockerOverlay2",
    "XfsShutdown",
}

# PodGC (pkg/controller/podgc): a pass every gcCheckPeriod (20 s). A pod bound to a node that
# does not exist (gcOrphaned) puts the node in quarantine (40 s) at the first pass that sees it
# missing; the first pass after the quarantine deletes the pod: 40-80 s after the node's
# deletion (e2e test_cleanup_paths saw 77.8 s). A pass is said missed only past this slack more.
PODGC_PERIOD_SECONDS = 20
PODGC_QUARANTINE_SECONDS = 40
PODGC_SLACK_SECONDS = 40
