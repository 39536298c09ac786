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
//     queues the object newly asks for are checked. A Binding may not carry a
//     queue marker: its review does not carry the pod to check. A denial is a 403 with
//     the authorizer's reason; an authorizer error or a missing authorizer
//     denies (fail closed).
//   - enforceDeleteACLs (opt-in; default false) applies YARN's kill rule
//     to DELETE, read from request.oldObject (the object being deleted):
//     the owner named by its user.info, members of its modify ACL (the
//     annotation modifyACLAnnotation, default usher.io/modify-acl, in YARN
//     syntax "users groups", read where user.info is: on the pod or the
//     pod template), admins of any queue it names (the queue markers of
//     enforceQueueACLs; the default queue without one; root when a marker
//     maps to no queue), cluster admins and application admins may delete
//     it; the DeleteAuthorizer decides and its reason is the denial
//     message. Without the rule: controllers matching systemUsers (when
//     trustControllers: the garbage collector, the Job, CronJob,
//     ReplicaSet, node and namespace controllers, or the shared
//     system:kube-controller-manager user), users matching externalUsers
//     and members of externalGroups (front ends clean up what they
//     submitted), members of system:masters (they bypass authorization
//     and could remove the webhook anyway), and anyone when the object
//     already has a deletionTimestamp (the kubelet's final delete of a
//     terminated pod; the first DELETE was checked). An object without
//     user.info (created before usher) or with an invalid one has no
//     owner: only modify-ACL members and admins may delete it. With
//     bypassAuth, the legacy username label names the owner when there is
//     no user.info. On UPDATE (status subresources included), changing
//     what decides deletion needs the same right, decided on the old
//     object: metadata.ownerReferences (the garbage collector deletes by
//     them), the modify-ACL annotation, any queue marker, and with
//     bypassAuth the legacy username label; so whoever may only edit a
//     workload cannot have it deleted or grant themselves the right to
//     delete it. Trusted deleters (controllers adopting and orphaning)
//     are not checked. An eviction (CREATE on pods/eviction), which
//     deletes a pod without a DELETE review and does not carry the pod,
//     is allowed only to trusted deleters and to those the
//     DeleteAuthorizer lets kill an unowned application in root (cluster,
//     application and root admins). A missing
//     authorizer or an authorizer error denies (fail closed); an
//     oldObject that does not decode as its kind is denied saying why.
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
// One role a file, in the manner of controller-runtime's
// pkg/webhook/admission:
//
//   - handler.go: Handler, its options (each documents its default;
//     NewHandler applies them in one place), Store and Current, and
//     decide, which routes a review to the rules below. A review reads the
//     handler's state (compiled settings and authorizers) once, through
//     Handler.current.
//   - authorizer.go: QueueAuthorizer and DeleteAuthorizer, each taking one
//     request value (SubmitRequest, DeleteRequest), with Func adapters.
//   - create.go, stamp.go, update.go, delete.go: the CREATE rules (stamp
//     or keep; what a stamp holds and its limits),
//     the UPDATE rules (user.info never changes; what decides deletion
//     changes only for whoever may delete) and the DELETE, eviction and
//     Binding rules (YARN's kill rule).
//   - queue.go: queue targeting: the queues an object's pods will run in,
//     and the QueueAuthorizer check of each.
//   - rule.go: Rule and Trust, the closed sets that say why a review was
//     let through; decisions, records and tests compare them, never
//     message text.
//   - response.go: decision, its constructors (allow, allowTrusted,
//     allowBecause, deny) and its two renderings, toResponse (k8s.io/api
//     types, for the Go API) and appendReview (JSON for the HTTP edge),
//     proven equal for every outcome by TestAppendReviewMatchesToResponse
//     and FuzzAppendReview.
//   - audit.go: Record, its one rendering (Record.AppendAttrs, also used
//     by the server's audit log) and SlogAudit.
//   - http.go: the thin, defensive HTTP edge (method, content type, body
//     cap, panics, the UID copied to every response, errors through
//     internal/httperr's one JSON error body).
//   - decode.go, object.go, userinfo.go: reading the review, the object's
//     metadata and the user.info annotation with internal/jsonscan, and
//     building the stamp patch.
//   - The settings, their defaults, keys and compiled form are package
//     settings; the decoder takes the labels and annotations it reads
//     from them (object.go, compile).
//
// The webhook decodes reviews with the strict scanner of internal/jsonscan
// instead of encoding/json reflection: decoding a 3.7 KB pod review with
// encoding/json (v1 or v2) into the k8s.io/api types plus a metadata-only
// view of the pod costs more than the handler's whole latency budget, and
// 24 allocations instead of 2 (BenchmarkStdlibDecode,
// BenchmarkStdlibV2Decode, BenchmarkScannerDecode; docs/benchmarks.md has
// the figures and the decision). The scanner walks the review once,
// reading the object's metadata on the way, accepts exactly what
// encoding/json accepts, and is checked against it on every fixture and by
// fuzzing; the request is still delivered as k8s.io/api admission/v1
// types.
package admission
