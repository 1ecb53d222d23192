"""The dump schema: per object kind, the fields the analysis reads, each typed as that kind's API
type declares it (written in schemalang.py; dumpschema.py checks and cuts objects by it). A new
field the analysis starts reading gets one line here.
"""

from __future__ import annotations

from kubectl_nodefail.snapshot.schemalang import (
    ANY,
    BOOL,
    INT,
    INT_OR_STR,
    STR,
    STR_LIST,
    STR_MAP,
    TIME,
    ListOf,
    MapOf,
    Object,
    Spec,
    obj,
)

# --- what the analysis reads, per kind ---------------------------------------------------------

METADATA = obj(
    ("name",),
    name=STR,
    namespace=STR,
    uid=STR,
    resourceVersion=STR,
    labels=STR_MAP,
    annotations=STR_MAP,
    finalizers=STR_LIST,
    creationTimestamp=TIME,
    deletionTimestamp=TIME,
    deletionGracePeriodSeconds=INT,
    ownerReferences=ListOf(
        # blockOwnerDeletion: whether a foreground deletion of the owner waits for this object
        obj(apiVersion=STR, kind=STR, name=STR, uid=STR, controller=BOOL, blockOwnerDeletion=BOOL),
    ),
)
# Owner objects are looked up by uid (their pods point at it): it must be there.
# ... and its generation (a Deployment's status speaks of its spec once observedGeneration
# reaches it)
OWNER_METADATA = Object({**METADATA.fields, "generation": INT}, (*METADATA.required, "uid"))
# A pod's generation counts its spec's changes (since 1.33), and managedFields says when each
# manager last wrote it (the fields they own are not kept): a spec written after the
# taint-eviction controller set the pod's eviction leaves that time unknown (evictionclock).
POD_METADATA = Object(
    {
        **METADATA.fields,
        "generation": INT,
        "managedFields": ListOf(obj(manager=STR, operation=STR, subresource=STR, time=TIME)),
    },
    METADATA.required,
)
# A condition as most kinds' types have it (PodCondition, JobCondition, DeploymentCondition, ...);
# a Node's also carries its kubelet's heartbeat.
CONDITION = obj(type=STR, status=STR, reason=STR, message=STR, lastTransitionTime=TIME)
NODE_CONDITION = Object({**CONDITION.fields, "lastHeartbeatTime": TIME})
CONTAINER = obj(("name",), name=STR, restartPolicy=STR)
CONTAINER_STATUS = obj(
    name=STR,
    ready=BOOL,
    started=BOOL,
    state=obj(
        waiting=obj(reason=STR),
        terminated=obj(reason=STR, signal=INT, exitCode=INT),
        running=ANY,
    ),
)

SCHEMAS: dict[str, Object] = {
    "Node": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(
            unschedulable=BOOL,
            taints=ListOf(obj(key=STR, value=STR, effect=STR, timeAdded=TIME)),
            providerID=STR,
        ),
        status=obj(
            conditions=ListOf(NODE_CONDITION),
            nodeInfo=obj(kubeletVersion=STR),
            volumesInUse=STR_LIST,
        ),
    ),
    "Lease": obj(
        ("metadata",),
        metadata=METADATA,
        # acquireTime: kube-controller-manager's leader Lease (analysis/leader.py)
        spec=obj(renewTime=TIME, leaseDurationSeconds=INT, acquireTime=TIME),
    ),
    "Pod": obj(
        ("metadata", "spec"),
        metadata=POD_METADATA,
        spec=obj(
            nodeName=STR,
            nodeSelector=STR_MAP,
            terminationGracePeriodSeconds=INT,
            containers=ListOf(CONTAINER),
            initContainers=ListOf(CONTAINER),
            tolerations=ListOf(
                obj(key=STR, operator=STR, value=STR, effect=STR, tolerationSeconds=INT)
            ),
            volumes=ListOf(
                obj(
                    name=STR,
                    persistentVolumeClaim=obj(("claimName",), claimName=STR),
                    ephemeral=ANY,
                )
            ),
            affinity=obj(nodeAffinity=obj(requiredDuringSchedulingIgnoredDuringExecution=ANY)),
        ),
        status=obj(
            phase=STR,
            reason=STR,
            message=STR,
            conditions=ListOf(CONDITION),
            containerStatuses=ListOf(CONTAINER_STATUS),
            initContainerStatuses=ListOf(CONTAINER_STATUS),
            ephemeralContainerStatuses=ListOf(CONTAINER_STATUS),
        ),
        # a pod built from a Table row (podrows.py): the printed columns it was read from
        readFrom=obj(table=obj(status=STR, ready=STR, readinessGates=STR)),
    ),
    "VolumeAttachment": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(nodeName=STR, source=obj(persistentVolumeName=STR)),
        status=obj(attached=BOOL),
    ),
    "PersistentVolumeClaim": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(volumeName=STR, accessModes=STR_LIST),
    ),
    "PersistentVolume": obj(
        ("metadata",),
        metadata=METADATA,
        spec=obj(
            accessModes=STR_LIST,
            local=ANY,
            hostPath=ANY,
            csi=obj(driver=STR, volumeHandle=STR),
            # where a local volume can be used (storage.pinning_volume), kept whole
            nodeAffinity=Object({"required": ANY}, ()),
        ),
    ),
    "Event": obj(
        ("metadata",),
        metadata=METADATA,
        reason=STR,
        message=STR,
        involvedObject=obj(kind=STR, name=STR, namespace=STR),
        # who wrote it: the kubelet's NodeNotReady tells of a not-ready taint since replaced
        source=obj(component=STR),
        reportingComponent=STR,
        # the first report: by then no pod wanted a volume "already exclusively attached"
        firstTimestamp=TIME,
        lastTimestamp=TIME,
        eventTime=TIME,
        type=STR,
        count=INT,
        # events.k8s.io/v1 spellings (the timeline reads both)
        regarding=obj(kind=STR, name=STR, namespace=STR),
        note=STR,
        series=obj(count=INT, lastObservedTime=TIME),
    ),
}
# Remediation automation (analysis/automation/): the fields it reads, per kind.
SELECTOR = obj(
    matchLabels=STR_MAP,
    matchExpressions=ListOf(obj(key=STR, operator=STR, values=STR_LIST)),
)
AUTOMATION_CONDITION = CONDITION
# A remediation template an MHC or NHC hands unhealthy machines or nodes to.
TEMPLATE_REF = obj(kind=STR, name=STR, namespace=STR, apiVersion=STR)
SCHEMAS["Machine"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(clusterName=STR),
    status=obj(nodeRef=obj(name=STR), conditions=ListOf(AUTOMATION_CONDITION)),
)
SCHEMAS["MachineHealthCheck"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(
        clusterName=STR,
        selector=SELECTOR,
        unhealthyConditions=ListOf(obj(type=STR, status=STR, timeout=STR)),
        maxUnhealthy=INT_OR_STR,
        unhealthyRange=STR,
        # cluster.x-k8s.io/v1beta2
        checks=obj(unhealthyNodeConditions=ListOf(obj(type=STR, status=STR, timeoutSeconds=INT))),
        remediation=obj(
            triggerIf=obj(unhealthyLessThanOrEqualTo=INT_OR_STR, unhealthyInRange=STR),
            # v1beta2's reference has no namespace: the template is in the MHC's own
            templateRef=obj(kind=STR, name=STR, apiVersion=STR),
        ),
        remediationTemplate=TEMPLATE_REF,  # v1beta1
    ),
    status=obj(expectedMachines=INT, currentHealthy=INT, conditions=ListOf(AUTOMATION_CONDITION)),
)
SCHEMAS["NodeHealthCheck"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(
        selector=SELECTOR,
        unhealthyConditions=ListOf(obj(type=STR, status=STR, duration=STR)),
        minHealthy=INT_OR_STR,
        maxUnhealthy=INT_OR_STR,
        pauseRequests=STR_LIST,
        remediationTemplate=TEMPLATE_REF,
        # used one after another, each for its timeout (a remediation in flight is waited for
        # that long: analysis/automation/medik8s.py)
        escalatingRemediations=ListOf(
            obj(remediationTemplate=TEMPLATE_REF, order=INT, timeout=STR)
        ),
    ),
    status=obj(
        observedNodes=INT,
        healthyNodes=INT,
        phase=STR,
        reason=STR,
        conditions=ListOf(AUTOMATION_CONDITION),
        inFlightRemediations=MapOf(TIME),
        unhealthyNodes=ListOf(
            obj(
                ("name",),
                name=STR,
                remediations=ListOf(
                    obj(
                        resource=obj(kind=STR, name=STR, namespace=STR),
                        started=TIME,
                        timedOut=TIME,  # an escalating remediation past its timeout
                    )
                ),
            )
        ),
    ),
)
SCHEMAS["NodeClaim"] = obj(
    ("metadata",),
    metadata=METADATA,
    spec=obj(nodeClassRef=obj(group=STR)),
    status=obj(nodeName=STR, providerID=STR),
)
# The owner kinds the analysis has rules for, each with the fields it reads, typed as that
# kind's own API type declares them (tests/unit/snapshot/test_openapi_schemas.py holds each to
# the API server's OpenAPI of every supported minor). Fields of the same name differ between
# kinds: a Job's status.active is a count, a CronJob's a list of references.
OWNER_CONDITIONS = obj(conditions=ListOf(CONDITION))
REPLICA_STATUS = obj(conditions=ListOf(CONDITION), replicas=INT)


# A pod template's spec.nodeName binds every pod the owner makes to that node, no scheduler
# involved: on a failed node, each replacement is bound there again (pods.py, bound_here).
TEMPLATE_NODE = obj(spec=obj(nodeName=STR))


def owner(spec: Object | None = None, status: Object = OWNER_CONDITIONS) -> Object:
    fields: dict[str, Spec] = {"kind": STR, "metadata": OWNER_METADATA, "status": status}
    if spec is not None:
        fields["spec"] = spec
    return Object(fields, ("metadata",))


SCHEMAS.update(
    {
        # status.replicas: how many pods it counts (SERVING is said only when all were read)
        "ReplicaSet": owner(
            obj(replicas=INT, selector=ANY, template=TEMPLATE_NODE), REPLICA_STATUS
        ),
        # a ReplicationController's selector is a map of labels, not a LabelSelector
        "ReplicationController": owner(
            obj(replicas=INT, selector=STR_MAP, template=TEMPLATE_NODE), REPLICA_STATUS
        ),
        # a paused Deployment's rollout makes no progress (its old ReplicaSets keep their pods)
        # strategy Recreate: a rollout creates no new pod while an old one is not finished
        "Deployment": owner(
            obj(replicas=INT, paused=BOOL, selector=ANY, strategy=obj(type=STR)),
            # pods of its newest template, once it has observed its spec
            obj(
                conditions=ListOf(CONDITION),
                updatedReplicas=INT,
                observedGeneration=INT,
                replicas=INT,
            ),
        ),
        "StatefulSet": owner(
            obj(
                replicas=INT,
                ordinals=obj(start=INT),
                podManagementPolicy=STR,
                # OrderedReady creates the next ordinal once the lower ones are available
                minReadySeconds=INT,
                selector=ANY,
                template=TEMPLATE_NODE,
                # a rolling update replaces the pods not on the update revision
                updateStrategy=obj(type=STR, rollingUpdate=obj(partition=INT)),
            ),
            obj(
                currentRevision=STR,
                updateRevision=STR,
                conditions=ListOf(CONDITION),
                replicas=INT,
            ),
        ),
        "DaemonSet": owner(obj(selector=ANY, updateStrategy=obj(type=STR))),
        "Job": owner(
            obj(
                # the wanted pods: min(parallelism, completions - succeeded)
                parallelism=INT,
                completions=INT,
                suspend=BOOL,
                podReplacementPolicy=STR,
                podFailurePolicy=ANY,
                # another controller than the built-in one manages the Job
                managedBy=STR,
                selector=ANY,
                template=TEMPLATE_NODE,
            ),
            # Complete / Failed (a finished Job replaces nothing), and its counts
            obj(
                conditions=ListOf(CONDITION), active=INT, succeeded=INT, failed=INT, terminating=INT
            ),
        ),
        # read for its name (the chain Pod -> Job -> CronJob), whether it is suspended, its
        # concurrencyPolicy (Forbid: no run while status.active lists a Job; Replace: the next
        # run deletes the Jobs it lists) and when that run comes (schedule, timeZone)
        "CronJob": owner(
            obj(
                suspend=BOOL,
                concurrencyPolicy=STR,
                schedule=STR,
                timeZone=STR,
                startingDeadlineSeconds=INT,
            ),
            obj(active=ListOf(obj(uid=STR, name=STR, namespace=STR)), lastScheduleTime=TIME),
        ),
    }
)
# The owner kinds whose schema above is their API type's (the rest of SCHEMAS are not owners).
OWNER_KINDS = (
    "ReplicaSet",
    "ReplicationController",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
)
# Any other kind is an owner no rule knows (a custom resource: Argo Rollouts, KubeVirt, Kueue,
# OpenKruise's own StatefulSet, ...), read only by its metadata (the owner chain and the
# explanation name it; no rule reads its spec or status). Nothing else in it is looked at, so
# no shape of its spec or status can fail a diagnosis: its fields are its own API's to define.
OTHER_OWNER = obj(("metadata",), kind=STR, metadata=OWNER_METADATA)
ITEM = obj(kind=STR)  # checked first: the kind picks the schema
UNSORTED = obj(("metadata",), metadata=METADATA)  # no kind: left out of the snapshot

# The dump's own envelope (`kubectl nodefail dump`); a kubectl List needs only `items`.
# (`items` are taken one by one while the file is read: take_item, check_items.)
DUMP = obj(
    ("capturedAt",),
    capturedAt=TIME,
    serverVersion=STR,
    source=STR,
    gaps=STR_LIST,
    notes=STR_MAP,
)
LIST = obj()
