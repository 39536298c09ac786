// Package e2e runs usher against a real Kubernetes control plane on
// 127.0.0.1 started by hack/e2e-cluster.sh: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, KWOK's fake nodes (no kubelet,
// no containers) and Kueue. A pod that does not tolerate the fake nodes'
// taint stays Pending; Jobs Kueue admits run to completion.
//
// Everything but this file is behind the build tag e2e, so a plain
// `go test ./...` builds nothing here; run the tests with hack/e2e.sh or
// `go test -tags e2e ./...` from this directory (see docs/e2e.md).
//
// Rules the harness enforces:
//   - Every process listens on 127.0.0.1 only, on a free port.
//   - Processes are stopped by the pids the harness recorded, never by name,
//     and also when the test binary fails, panics or is killed: a watchdog
//     started with the cluster takes it down once the test process is gone.
//   - Each usher a test starts (UsherProcess) serves one test's namespaces
//     only: its webhooks select them by label. It is killed by its pid when
//     the test ends, and by the kernel if the test process dies first.
//   - Tests act as the users of the token file (Admin, Alice, Bob, Carol,
//     Ext), each with fixed groups, so the userInfo the API server sends to a
//     webhook is known in advance.
//   - Test users may manage the workload kinds usher admits in the namespaces
//     made for them, and nothing else: no impersonation, no secrets, no
//     webhook configurations.
package e2e
