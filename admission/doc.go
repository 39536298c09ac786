// Package admission is usher's Kubernetes admission logic: it records a
// trustworthy submitter identity on workloads, keeps it from being forged,
// and optionally checks queue ACLs at admission, for whichever batch
// scheduler the cluster runs. Package server mounts Handler.MutateHTTP and
// Handler.ValidateHTTP.
//
// Rules this package enforces:
//
//   - Kinds: Pod, and the pod templates of Deployment, ReplicaSet, DaemonSet,
//     StatefulSet, Job, ReplicationController (spec.template) and CronJob
//     (spec.jobTemplate.spec.template), matched by API group and kind.
//     Other kinds, and operations other than CREATE and UPDATE (and DELETE
//     with enforceDeleteACLs), are allowed unchanged.
//   - Namespaces matching bypassNamespaces (default ^kube-system$), or not
//     matching a non-empty processNamespaces, are allowed unchanged.
//   - enforceQueueACLsMode and enforceDeleteACLsMode "warn": what the queue
//     check or the kill rule refuses (403) is admitted with the refusal as a
//     warning and an audit record marked Warned; the identity rules and
//     failures to decide deny in every mode.
//   - CREATE without the yunikorn.apache.org/user.info annotation: /mutate
//     adds {"user":…,"groups":[…]} from the request's userInfo. With an
//     IdentityResolver and stampGroups decided, the groups are the ones it
//     decides, asked once per review, and DirectoryGroupsAnnotation lists
//     the directory's (docs/identity.md). A stamp past settings.MaxStampGroups,
//     settings.MaxStampBytes or the API server's 256 KiB of annotations is denied.
//     When the directory cannot answer, the review is denied with
//     enforceQueueACLs or stampGroupsOnError deny, else stamped with the
//     API server's groups, marked degraded and warned. Objects created by
//     controllers get the controller's identity, as YuniKorn does, except
//     a ReplicaSet created by a user matching systemUsers, never patched
//     (else the Deployment controller would create ReplicaSets without end).
//   - CREATE with the annotation: it must be a JSON object with a non-empty
//     "user", optional "groups" and nothing else, refusing anything
//     YuniKorn's encoding/json would read differently (ParseUserInfo). It
//     is kept when the submitter is trusted: a controller matching
//     systemUsers (with trustControllers), a user matching externalUsers or
//     a member of a group matching externalGroups, its directory groups
//     decided again. One naming the submitter itself is replaced by the
//     stamp usher decides when they differ (on /validate it must be that
//     stamp). Anyone else is denied.
//   - bypassAuth: any submitter may supply a valid annotation, and an object
//     with the legacy yunikorn.apache.org/username label but no annotation
//     is left unstamped with a deprecation warning, as YuniKorn does.
//   - UPDATE: adding, removing or changing the annotation (or
//     DirectoryGroupsAnnotation) on a pod or any pod template is denied for
//     everyone (YuniKorn checks pods only, so whoever may edit a Deployment
//     could make its controller create pods under another name).
//   - /validate on CREATE re-checks the final object: the annotation must be
//     present (except the two unstamped cases above) and pass the trust rule.
//   - enforceQueueACLs: the object is checked against every queue its pods
//     will run in. A pod-level queue source (YuniKorn's) counts on the pod
//     or pod template only, and pods with none of a pod-level scheduler's
//     markers run in the default queue; a workload-level source (Kueue,
//     Volcano, KAI) counts at every level. All markers count, so a second
//     scheduler's marker cannot smuggle a workload into a forbidden queue.
//     The QueueAuthorizer must allow the effective identity each queue; on
//     UPDATE, queues newly asked for. A Binding may not carry a queue
//     marker (its review does not carry the pod to check).
//   - enforceDeleteACLs applies YARN's kill rule (docs/delete.md) to
//     DELETE, to UPDATEs of what decides it (ownerReferences, the modify
//     ACL, queue markers, with bypassAuth the legacy label), to adoptions by
//     a trusted controller, and to evictions and Bindings, which only
//     trusted deleters and admins of root may make.
//   - A missing authorizer or an authorizer's error denies (fail closed).
//   - Malformed input: a body that is not an admission.k8s.io/v1
//     AdmissionReview with a request and a UID gets HTTP 400 (the API server
//     applies the failurePolicy); an object that does not decode as its kind
//     is denied saying why. The response UID always equals the request UID.
package admission
