// Package admission is usher's Kubernetes admission logic: it records a
// trustworthy submitter identity on workloads, keeps it from being forged,
// and optionally checks queue ACLs at admission, for whichever batch
// scheduler the cluster runs. The HTTP server (TLS, metrics, reload) lives in
// package server and mounts Handler.MutateHTTP and Handler.ValidateHTTP.
//
// Rules this package enforces:
//
//   - Kinds: Pod, and the pod templates of Deployment, ReplicaSet, DaemonSet,
//     StatefulSet, Job, ReplicationController (spec.template) and CronJob
//     (spec.jobTemplate.spec.template), matched by API group and kind
//     (Volcano's batch.volcano.sh Job is not a batch/v1 Job). Other kinds,
//     and operations other than CREATE and UPDATE (and DELETE when
//     enforceDeleteACLs is on), are allowed unchanged.
//   - Namespaces matching bypassNamespaces (default ^kube-system$), or not
//     matching a non-empty processNamespaces, are allowed unchanged.
//     settings.NamespaceCondition turns them into a webhook
//     matchCondition (CEL), so that the API server does not call usher for
//     them at all.
//   - enforceQueueACLsMode and enforceDeleteACLsMode "warn": what the
//     queue check or the kill rule refuses (403) is admitted with the
//     refusal as an admission warning and an audit record marked Warned;
//     the identity rules and failures to decide deny in every mode.
//   - CREATE without the yunikorn.apache.org/user.info annotation: /mutate
//     adds {"user":…,"groups":[…]} from the request's authenticated userInfo,
//     creating the annotations map (or the template's metadata) when absent.
//     With an IdentityResolver (the partition's groups mode is resolve or
//     merge) and stampGroups decided, the groups are the ones it decides,
//     asked once per review and used by the stamp, the queue check and the
//     audit record alike: the API server's first, then the directory's
//     (with resolve, the directory's alone), and DirectoryGroupsAnnotation
//     lists the directory's. A stamp holds at most MaxStampGroups groups
//     and MaxStampBytes, and the object's annotations at most the API
//     server's 256 KiB, or the review is denied. When the directory cannot
//     answer, the review is denied with enforceQueueACLs or
//     stampGroupsOnError deny, else stamped with the API server's groups,
//     marked degraded and warned about.
//     Objects created by controllers get the controller's identity, as
//     YuniKorn does, with one exception: a ReplicaSet created by a user
//     matching systemUsers is never patched (the Deployment controller would
//     otherwise create ReplicaSets without end); its pods are stamped.
//   - CREATE with the annotation: the value must be a JSON object with a
//     non-empty "user" and optional "groups" and no other member (from
//     anyone, trusted or not), so that usher judges the identity the
//     scheduler runs: YuniKorn decodes it with encoding/json, which matches
//     member names without regard to case (Unicode folding included) and
//     lets the last match win, so a member such as "User", "uſer" or
//     "\u0055ser", a repeated member, invalid UTF-8 or a lone surrogate
//     escape is refused and named (see ParseUserInfo). It is kept when the
//     submitter is trusted: a controller matching systemUsers (if
//     trustControllers), a user matching externalUsers or a member of a
//     group matching externalGroups, with its directory groups (those
//     DirectoryGroupsAnnotation lists) decided again when an
//     IdentityResolver is set (a ReplicaSet a controller creates is not
//     changed). One naming the submitter itself is replaced by the stamp
//     usher decides whenever the two differ (on /validate, which writes
//     nothing, it must be that stamp). Anyone else is denied with a
//     message naming the user and annotation.
//   - bypassAuth: any submitter may supply the annotation (it must still
//     be valid), and an object carrying the legacy
//     yunikorn.apache.org/username label but no annotation is left
//     unstamped, with a deprecation warning. Without bypassAuth the label is
//     ignored and the annotation always stamped. This follows YuniKorn's
//     user and group resolution documentation ("allow any external user to
//     create pods with user information set") and its admission
//     controller, which skips the trust check when bypassAuth is on.
//   - UPDATE, on /validate and /mutate alike: adding, removing or changing
//     the annotation (or DirectoryGroupsAnnotation) on a pod or on the pod
//     template of any workload kind is denied, for every user, trusted or not (YuniKorn checks pods only, so
//     whoever may edit a Deployment could make its controller create pods
//     under another name). Other updates (status, scale, labels, other
//     annotations) pass.
//   - /validate on CREATE re-checks the final object: the annotation must be
//     present (except the two unstamped cases above) and pass the trust rule,
//     so an unstamped object that slipped past /mutate is denied.
//   - enforceQueueACLs: the object is checked against the queues its pods
//     will run in. Each queue source (queueSources) says where its
//     scheduler reads the marker (QueueSource.Level): a pod-level source
//     (YuniKorn's label and annotation yunikorn.apache.org/queue and label
//     queue) counts on the pod or pod template only, and pods on which none
//     of a pod-level scheduler's markers is set run in the partition's
//     default queue; a workload-level source (Kueue, Volcano, KAI) counts on
//     the pod template, a CronJob's job template and the workload itself.
//     Each marker is mapped to a queue path (queueMapping) and the
//     QueueAuthorizer must allow the effective identity (the stamped
//     submitter, the accepted annotation's user and groups, or the legacy
//     label's user with no groups) to submit to each queue, and to the
//     default queue when it applies. All markers count, so a second
//     scheduler's marker cannot smuggle a workload into a forbidden queue,
//     and a marker on a workload's own metadata that its scheduler does not
//     read cannot stand in for the template's. Objects a controller makes
//     are checked the same way, under the identity they carry. On UPDATE,
//     queues the object newly asks for are checked. A denial is a 403 with
//     the authorizer's reason; an authorizer error or a missing authorizer
//     denies (fail closed).
//   - enforceDeleteACLs (opt-in; default false) applies YARN's kill rule
//     (docs/delete.md) to DELETE, read from request.oldObject: the owner
//     its user.info names, members of its modify ACL (modifyACLAnnotation,
//     read where user.info is), admins of any queue it names (root when a
//     marker maps to no queue), cluster and application admins may delete
//     it; the DeleteAuthorizer decides and its reason is the message.
//     Trusted deleters skip the rule: controllers matching systemUsers
//     (with trustControllers), externalUsers, externalGroups,
//     system:masters (they could remove the webhook anyway), and anyone
//     when the object already has a deletionTimestamp. An object without a
//     valid user.info has no owner (with bypassAuth, the legacy label
//     names it). On UPDATE, changing what decides deletion
//     (ownerReferences, the modify ACL, a queue marker, with bypassAuth
//     the legacy label) needs the same right, decided on the old object.
//     An eviction, which deletes a pod without a DELETE review and does
//     not carry it, and a Binding that sets what decides deletion, are
//     allowed only to trusted deleters and to those who may kill an
//     unowned application in root. A missing authorizer or an authorizer
//     error denies; an oldObject that does not decode is denied saying why.
//   - Malformed input: a body that is not an admission.k8s.io/v1
//     AdmissionReview with a request and a UID gets HTTP 400 (the API server
//     applies the failurePolicy, which should be Fail); a review whose object
//     does not decode as its kind gets allowed=false with a message saying
//     what is wrong. The response UID always equals the request UID.
//
// Regular expressions (systemUsers, externalUsers, externalGroups,
// processNamespaces, bypassNamespaces) are used as written with
// regexp.MatchString, as YuniKorn uses them: they are not anchored for you,
// so "admin" also matches "notadmin". settings.Config.Warnings reports
// unanchored patterns.
//
// # Layout
//
// One role a file: handler.go (Handler, State, its options, decide),
// http.go (the HTTP edge: decode once, answer once), decode.go,
// object.go and userinfo.go (reading the review with internal/jsonscan,
// which docs/benchmarks.md weighs against encoding/json), create.go,
// stamp.go, update.go, delete.go and queue.go (the rules), rule.go (why a
// review was let through), response.go (decision: its constructors and
// its one rendering, appendReview) and audit.go (Record, Denial).
package admission
