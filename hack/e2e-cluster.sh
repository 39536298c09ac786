#!/usr/bin/env bash
# e2e-cluster.sh — a real Kubernetes control plane on 127.0.0.1 for usher's
# end-to-end tests: etcd, kube-apiserver and kube-controller-manager, no
# kubelet, no scheduler, no containers (pods stay Pending, which is enough to
# see what admission did to them).
#
# Usage:
#   hack/e2e-cluster.sh up      install what is missing, build the binaries once,
#                               start the cluster (a no-op when it already runs)
#   hack/e2e-cluster.sh down    stop every process this state dir started (TERM,
#                               then KILL), also after a failed or half-done up
#   hack/e2e-cluster.sh env     print the cluster's environment (export lines):
#                               eval "$(hack/e2e-cluster.sh env)"
#   hack/e2e-cluster.sh status  say whether the cluster runs (exit 0) or not (1)
#   hack/e2e-cluster.sh clean   down, then remove the state dir
#   hack/e2e-cluster.sh build   only install and build the binaries
#
# Settings (environment):
#   USHER_E2E_CACHE        binaries cache  (default ${XDG_CACHE_HOME:-$HOME/.cache}/usher-e2e)
#   USHER_E2E_STATE        state dir: certs, tokens, kubeconfigs, etcd data,
#                          logs, pids, env   (default $USHER_E2E_CACHE/cluster)
#   USHER_E2E_KCM_SA_CREDENTIALS
#                          true (default): the controller manager acts as one
#                          service account per controller
#                          (system:serviceaccount:kube-system:replicaset-controller, ...);
#                          false: every controller acts as the shared user
#                          system:kube-controller-manager
#   USHER_E2E_APISERVER_ARGS  extra kube-apiserver flags (word split)
#   USHER_E2E_OWNER_PID    when set, a watchdog runs `down` as soon as this
#                          process is gone (used by the Go TestMain so a test
#                          binary that panics or is killed leaves nothing behind)
#
# Everything listens on 127.0.0.1 only, on free ports chosen at start;
# kube-controller-manager listens on none.
set -euo pipefail

KUBE_VERSION=v1.35.4
# Bump when the way binaries are built changes, to force a rebuild.
BUILD_REV=1
USERS=(admin alice bob carol ext)
declare -A TOKEN # user -> bearer token, filled by gen_tokens

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF="$ROOT/hack/e2e-cluster.sh"
TOOLS="$ROOT/hack/tools/kube"
CACHE=${USHER_E2E_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/usher-e2e}
STATE=${USHER_E2E_STATE:-$CACHE/cluster}
BIN="$CACHE/bin"

log() { printf '[e2e-cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- installing

as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo -n "$@" || die "need root to run: $* (run it yourself, then retry)"
	else
		die "need root to run: $*"
	fi
}

find_etcd() {
	ETCD=$(command -v etcd || true)
	[ -n "$ETCD" ] || { [ -x /usr/bin/etcd ] && ETCD=/usr/bin/etcd; } || true
}

install_packages() {
	local pkgs=()
	find_etcd
	[ -n "$ETCD" ] || pkgs+=(etcd-server)
	command -v openssl >/dev/null || pkgs+=(openssl)
	command -v curl >/dev/null || pkgs+=(curl ca-certificates)
	[ ${#pkgs[@]} -gt 0 ] || return 0
	command -v apt-get >/dev/null || die "missing ${pkgs[*]} and no apt-get to install them"
	log "installing ${pkgs[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# The etcd-server package would start a system-wide etcd where an init
	# system runs; forbid service starts while installing unless the machine
	# already has a policy.
	local policy=/usr/sbin/policy-rc.d made_policy=
	if [ ! -e "$policy" ]; then
		as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
		made_policy=1
	fi
	local rc=0
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" </dev/null || rc=$?
	[ -z "$made_policy" ] || as_root rm -f "$policy"
	[ $rc = 0 ] || die "apt-get install ${pkgs[*]} failed"
	find_etcd
	[ -n "$ETCD" ] || die "etcd is still not on PATH after installing etcd-server"
}

# ------------------------------------------------------------------ building

build_stamp() {
	{
		echo "$KUBE_VERSION rev $BUILD_REV"
		go version
		cat "$TOOLS/go.mod" "$TOOLS/go.sum"
	} | sha256sum | cut -d' ' -f1
}

build_binaries() {
	command -v go >/dev/null || die "go is not on PATH"
	mkdir -p "$CACHE"
	# One build at a time per cache, even when several clusters start together.
	exec 8>"$CACHE/build.lock"
	flock 8
	local stamp
	stamp=$(build_stamp)
	if [ -f "$BIN/stamp" ] && [ "$(cat "$BIN/stamp")" = "$stamp" ] &&
		[ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/kubectl" ]; then
		exec 8>&-
		return 0
	fi
	local v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version
	local minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	local ldflags="-s -w"
	for p in $v $cv; do
		ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	log "building kube-apiserver, kube-controller-manager and kubectl $KUBE_VERSION into $BIN"
	log "(a cold build takes several minutes on 2 cores; later runs use the cache)"
	local start=$SECONDS tmp="$BIN.tmp.$$"
	rm -rf "$tmp" && mkdir -p "$tmp"
	(cd "$TOOLS" && go build -ldflags "$ldflags" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kubectl) || { rm -rf "$tmp"; die "building the Kubernetes binaries failed"; }
	echo "$stamp" >"$tmp/stamp"
	rm -rf "$BIN" && mv "$tmp" "$BIN"
	log "built in $((SECONDS - start))s: $("$BIN/kube-apiserver" --version)"
	exec 8>&-
}

# ----------------------------------------------------------------- processes

pid_file() { echo "$STATE/pids/$1.pid"; }

# alive NAME: the process recorded for NAME runs and is ours (its command line
# names this state dir, so a recycled pid is never taken for it).
alive() {
	local f pid
	f=$(pid_file "$1")
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	case $cmdline in *"$STATE/"*) return 0 ;; esac
	return 1
}

stop() {
	local name=$1 f pid
	f=$(pid_file "$name")
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if [ "$pid" != "$$" ] && alive "$name"; then
		log "stopping $name (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			alive "$name" || break
			sleep 0.2
		done
		if alive "$name"; then
			log "$name did not stop after TERM, sending KILL"
			kill -KILL "$pid" 2>/dev/null || true
			for _ in $(seq 1 25); do
				alive "$name" || break
				sleep 0.2
			done
		fi
	fi
	rm -f "$f"
}

# launch NAME BINARY ARGS...: start a process in its own session so a Ctrl-C
# in the terminal does not reach it, logging to logs/NAME.log.
launch() {
	local name=$1
	shift
	mkdir -p "$STATE/logs" "$STATE/pids"
	# Close the lock descriptors: a child holding them would keep the state
	# dir locked for as long as it runs.
	setsid "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null 8>&- 9>&- &
	echo $! >"$(pid_file "$name")"
	# alive knows the process by its command line, which is this script's
	# until the forked shell has run the command: wait for that (or, if it
	# cannot be run, give up after 10s; start then sees it gone).
	for _ in $(seq 1 200); do
		alive "$name" && return 0
		sleep 0.05
	done
}

# used_ports: every local TCP port in use on this machine.
used_ports() {
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk 'NR>1 { split($2, a, ":"); print a[2] }' |
		while read -r hex; do [ -z "$hex" ] || echo $((16#$hex)); done | sort -u
}

# free_port: set PORT to a port below the kernel's ephemeral range (which
# port-0 listeners and outgoing connections draw from, so they never take
# it) that nothing uses and that this run has not handed out yet. Another
# process may still bind it before ours does: start notices and retries.
# (Not to be called in $(...): TAKEN must outlive the call.)
TAKEN=" "
PORT=
free_port() {
	local used p lo
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	[ "$lo" -gt 13024 ] || lo=32768
	used=" $(used_ports | tr '\n' ' ') "
	for _ in $(seq 1 200); do
		p=$((lo - 12000 + RANDOM % 12000))
		case "$used$TAKEN" in *" $p "*) continue ;; esac
		TAKEN+="$p "
		PORT=$p
		return 0
	done
	die "found no free port"
}

# listens PID PORT: process PID has a listening TCP socket on PORT (so a
# health check on PORT reached it, not another cluster's process that
# bound the port first).
listens() {
	local inode
	for inode in $(awk -v p="$(printf ':%04X' "$2")" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null); do
		[[ $(ls -l "/proc/$1/fd" 2>/dev/null) == *"socket:[$inode]"* ]] && return 0
	done
	return 1
}

# wait_for NAME DEADLINE CHECK...: poll until CHECK succeeds and NAME
# listens on OWN_PORT (when set), while NAME runs and $SECONDS is before
# DEADLINE.
wait_for() {
	local name=$1 deadline=$2
	shift 2
	while [ $SECONDS -lt "$deadline" ]; do
		if "$@" >/dev/null 2>&1 && { [ -z "$OWN_PORT" ] || listens "$(cat "$(pid_file "$name")")" "$OWN_PORT"; }; then
			return 0
		fi
		alive "$name" || return 1
		sleep 0.5
	done
	return 1
}

# start NAME SECONDS CHECK_FUNC ARGS_FUNC: start NAME with the command line
# ARGS_FUNC puts in argv (picking fresh ports, and setting OWN_PORT to the
# one CHECK_FUNC talks to) and wait until it is healthy. A process that
# exits before it is healthy is started again, with new ports, until
# SECONDS have passed: its port was taken between pick and bind, or
# (kube-controller-manager, which waits only 10s for the API server's
# /healthz) a loaded machine made something it waits on slow.
start() {
	local name=$1 secs=$2 check=$3 argsf=$4 from attempt=0
	local logf="$STATE/logs/$name.log" deadline=$((SECONDS + $2))
	while :; do
		local -a argv=()
		OWN_PORT=
		$argsf
		attempt=$((attempt + 1))
		log "starting $name (attempt $attempt)"
		from=$(($(stat -c %s "$logf" 2>/dev/null || echo 0) + 1))
		launch "$name" "${argv[@]}"
		if wait_for "$name" "$deadline" "$check"; then
			return 0
		fi
		if alive "$name"; then
			log "$name is not healthy after ${secs}s; last lines of $logf:"
			tail -n 30 "$logf" >&2 || true
			return 1
		fi
		rm -f "$(pid_file "$name")"
		if [ $SECONDS -ge $deadline ]; then
			log "$name exited and ${secs}s have passed; giving up. Last lines of $logf:"
			tail -n 30 "$logf" >&2 || true
			return 1
		fi
		log "$name exited before it was healthy; starting it again. It said:"
		tail -c "+$from" "$logf" | tail -n 5 >&2 || true
		sleep 1 # not to spin on a process that exits at once
	done
}

# retry SECONDS CMD...: run CMD until it succeeds, for up to SECONDS.
retry() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		log "$1 failed; trying again"
		sleep 1
	done
}

# --------------------------------------------------------------- the pieces

gen_pki() {
	local pki="$STATE/pki"
	mkdir -p "$pki"
	(
		cd "$pki"
		umask 077
		openssl req -x509 -newkey rsa:2048 -nodes -days 30 -sha256 \
			-keyout ca.key -out ca.crt -subj "/CN=usher-e2e-ca" 2>/dev/null
		cat >apiserver.ext <<-'EOF'
			basicConstraints=CA:FALSE
			keyUsage=digitalSignature,keyEncipherment
			extendedKeyUsage=serverAuth
			subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1
		EOF
		openssl req -newkey rsa:2048 -nodes -sha256 -keyout apiserver.key -out apiserver.csr \
			-subj "/CN=kube-apiserver" 2>/dev/null
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
			-sha256 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		# The client certificate kube-apiserver presents to webhooks
		# (write_admission_config), from a CA of its own: usher serve
		# --webhook-client-ca webhook-client-ca.crt answers only it.
		openssl req -x509 -newkey rsa:2048 -nodes -days 30 -sha256 \
			-keyout webhook-client-ca.key -out webhook-client-ca.crt -subj "/CN=usher-e2e-webhook-client-ca" 2>/dev/null
		printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >webhook-client.ext
		openssl req -newkey rsa:2048 -nodes -sha256 -keyout webhook-client.key -out webhook-client.csr \
			-subj "/CN=kube-apiserver" 2>/dev/null
		openssl x509 -req -in webhook-client.csr -CA webhook-client-ca.crt -CAkey webhook-client-ca.key -CAcreateserial \
			-days 30 -sha256 -extfile webhook-client.ext -out webhook-client.crt 2>/dev/null
		chmod 644 ca.crt apiserver.crt sa.pub webhook-client-ca.crt
	)
}

# Test users. Groups are what the API server reports in userInfo (plus
# system:authenticated, which it adds itself).
user_groups() {
	case $1 in
	admin) echo "system:masters" ;;
	alice) echo "dev" ;;
	bob) echo "ops" ;;
	carol) echo "spark-submitters" ;;
	ext) echo "" ;;
	system:kube-controller-manager) echo "" ;;
	esac
}

gen_tokens() {
	mkdir -p "$STATE/auth" "$STATE/kubeconfig"
	: >"$STATE/auth/tokens.csv"
	chmod 600 "$STATE/auth/tokens.csv"
	local u tok
	for u in "${USERS[@]}" system:kube-controller-manager; do
		tok=$(openssl rand -hex 24)
		printf '%s,%s,%s,"%s"\n' "$tok" "$u" "uid-${u//:/-}" "$(user_groups "$u")" >>"$STATE/auth/tokens.csv"
		TOKEN[$u]=$tok
	done
}

# An audit log of every write (who, what, which object) helps tell what the
# API server saw when a test fails: logs/audit.log, one JSON event a line.
write_audit_policy() {
	cat >"$STATE/auth/audit-policy.yaml" <<-'EOF'
		apiVersion: audit.k8s.io/v1
		kind: Policy
		omitStages: [RequestReceived]
		rules:
		- level: None
		  verbs: [get, list, watch]
		- level: Metadata
	EOF
}

# kube-apiserver presents pki/webhook-client.crt to every webhook: the
# kubeConfigFile of its AdmissionConfiguration names users by the webhook's
# host:port (usher's are on 127.0.0.1 at random ports), and "*" is the
# default for any host (docs/security.md).
write_admission_config() {
	cat >"$STATE/auth/webhook-client.kubeconfig" <<-EOF
		apiVersion: v1
		kind: Config
		users:
		- name: '*'
		  user:
		    client-certificate: "$STATE/pki/webhook-client.crt"
		    client-key: "$STATE/pki/webhook-client.key"
	EOF
	local plugin
	{
		echo "apiVersion: apiserver.config.k8s.io/v1"
		echo "kind: AdmissionConfiguration"
		echo "plugins:"
		for plugin in ValidatingAdmissionWebhook MutatingAdmissionWebhook; do
			echo "- name: $plugin"
			echo "  configuration:"
			echo "    apiVersion: apiserver.config.k8s.io/v1"
			echo "    kind: WebhookAdmissionConfiguration"
			echo "    kubeConfigFile: \"$STATE/auth/webhook-client.kubeconfig\""
		done
	} >"$STATE/auth/admission.yaml"
}

write_kubeconfig() { # NAME USER TOKEN
	local f="$STATE/kubeconfig/$1"
	rm -f "$f"
	(umask 077 && cat >"$f") <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: usher-e2e
		  cluster:
		    server: $SERVER
		    certificate-authority: $STATE/pki/ca.crt
		users:
		- name: $2
		  user:
		    token: $3
		contexts:
		- name: $2@usher-e2e
		  context:
		    cluster: usher-e2e
		    user: $2
		current-context: $2@usher-e2e
	EOF
}

etcd_args() {
	free_port
	ETCD_PORT=$PORT OWN_PORT=$PORT
	free_port
	local peer=$PORT
	rm -rf "$STATE/etcd"
	mkdir -p "$STATE/etcd"
	chmod 700 "$STATE/etcd"
	argv=("$ETCD" --name usher-e2e --data-dir "$STATE/etcd"
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT"
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer"
		--initial-cluster "usher-e2e=http://127.0.0.1:$peer" --initial-cluster-state new
		--logger zap --log-level warn)
}
# The health checks read the whole answer before matching it: with pipefail,
# `curl | grep -q` fails whenever grep exits before curl has written. Each
# has a time limit (-m): a port another process took may accept a
# connection and never answer.
etcd_ok() { [[ $(curl -fsS -m 10 "http://127.0.0.1:$ETCD_PORT/health") == *'"health":"true"'* ]]; }

apiserver_args() {
	free_port
	API_PORT=$PORT OWN_PORT=$PORT
	SERVER="https://127.0.0.1:$API_PORT"
	# shellcheck disable=SC2206
	local extra=(${USHER_E2E_APISERVER_ARGS:-})
	# shellcheck disable=SC2054 # the commas are inside flag values
	argv=("$BIN/kube-apiserver"
		--etcd-servers "http://127.0.0.1:$ETCD_PORT"
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT"
		--cert-dir "$STATE/pki" --tls-cert-file "$STATE/pki/apiserver.crt" --tls-private-key-file "$STATE/pki/apiserver.key"
		--client-ca-file "$STATE/pki/ca.crt"
		--token-auth-file "$STATE/auth/tokens.csv"
		--authorization-mode RBAC
		--enable-admission-plugins MutatingAdmissionWebhook,ValidatingAdmissionWebhook
		--admission-control-config-file "$STATE/auth/admission.yaml"
		--service-account-issuer https://kubernetes.default.svc.cluster.local
		--service-account-key-file "$STATE/pki/sa.pub" --service-account-signing-key-file "$STATE/pki/sa.key"
		--service-cluster-ip-range 10.0.0.0/24
		--audit-policy-file "$STATE/auth/audit-policy.yaml" --audit-log-path "$STATE/logs/audit.log"
		--endpoint-reconciler-type none
		--profiling=false
		--v 1
		"${extra[@]}")
}
# Ready, and healthy: /healthz is what kube-controller-manager waits for.
apiserver_ok() {
	local p
	for p in readyz healthz; do
		[ "$(curl -fsS -m 10 --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer ${TOKEN[admin]}" "$SERVER/$p")" = ok ] || return 1
	done
}

# kube-controller-manager serves nothing (--secure-port 0: no port to
# collide on); it is up when its service account controller has made the
# default namespace's service account, as the tests wait for in theirs.
kcm_args() {
	local sa=${USHER_E2E_KCM_SA_CREDENTIALS:-true}
	# shellcheck disable=SC2054 # the commas are inside flag values
	argv=("$BIN/kube-controller-manager"
		--kubeconfig "$STATE/kubeconfig/kube-controller-manager"
		--secure-port 0
		--leader-elect=false
		--use-service-account-credentials="$sa"
		--service-account-private-key-file "$STATE/pki/sa.key"
		--root-ca-file "$STATE/pki/ca.crt"
		--controllers deployment-controller,replicaset-controller,replicationcontroller-controller,statefulset-controller,daemonset-controller,job-controller,cronjob-controller,ttl-after-finished-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller
		--profiling=false
		--v 1)
}
kcm_ok() {
	curl -fsS -m 10 -o /dev/null --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer ${TOKEN[admin]}" \
		"$SERVER/api/v1/namespaces/default/serviceaccounts/default"
}

# RBAC for the test users: the ClusterRole usher-e2e-tenant (the workload kinds
# usher admits, every verb, nothing else: no impersonation, no secrets, no
# webhooks) bound in the namespace "e2e"; the Go tests bind it in the
# namespaces they make. Tenants may also read namespaces.
bootstrap() {
	# (|| return: run by retry, where set -e does not stop at a failure.)
	"$BIN/kubectl" --kubeconfig "$STATE/kubeconfig/admin" apply -f - >/dev/null <<-'EOF' || return
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata:
		  name: usher-e2e-tenant
		rules:
		- apiGroups: [""]
		  resources: [pods, pods/log, replicationcontrollers, configmaps, events]
		  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
		- apiGroups: [apps]
		  resources: [deployments, deployments/scale, replicasets, replicasets/scale, statefulsets, statefulsets/scale, daemonsets]
		  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
		- apiGroups: [batch]
		  resources: [jobs, cronjobs]
		  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRole
		metadata:
		  name: usher-e2e-namespace-reader
		rules:
		- apiGroups: [""]
		  resources: [namespaces]
		  verbs: [get, list, watch]
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: ClusterRoleBinding
		metadata:
		  name: usher-e2e-namespace-reader
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: usher-e2e-namespace-reader}
		subjects:
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ext}
		---
		apiVersion: v1
		kind: Namespace
		metadata:
		  name: e2e
		---
		apiVersion: rbac.authorization.k8s.io/v1
		kind: RoleBinding
		metadata:
		  name: usher-e2e-tenant
		  namespace: e2e
		roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: usher-e2e-tenant}
		subjects:
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
		- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ext}
	EOF
	# Without per-controller credentials every controller acts as
	# system:kube-controller-manager, whose bootstrap role only covers the
	# controller manager's own needs: give it what the controllers need, as
	# clusters run that way do.
	if [ "${USHER_E2E_KCM_SA_CREDENTIALS:-true}" = false ]; then
		"$BIN/kubectl" --kubeconfig "$STATE/kubeconfig/admin" apply -f - >/dev/null <<-'EOF'
			apiVersion: rbac.authorization.k8s.io/v1
			kind: ClusterRoleBinding
			metadata:
			  name: usher-e2e-shared-controller-user
			roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
			subjects:
			- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:kube-controller-manager}
		EOF
	fi
}

q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

write_env() {
	local f="$STATE/env.tmp" u U
	{
		echo "# usher e2e cluster; source this file or eval \"\$(hack/e2e-cluster.sh env)\""
		echo "export USHER_E2E_STATE=$(q "$STATE")"
		echo "export USHER_E2E_SERVER=$(q "$SERVER")"
		echo "export USHER_E2E_CA_FILE=$(q "$STATE/pki/ca.crt")"
		echo "export USHER_E2E_CA_KEY_FILE=$(q "$STATE/pki/ca.key")"
		echo "export USHER_E2E_WEBHOOK_CLIENT_CA_FILE=$(q "$STATE/pki/webhook-client-ca.crt")"
		echo "export USHER_E2E_WEBHOOK_CLIENT_CERT_FILE=$(q "$STATE/pki/webhook-client.crt")"
		echo "export USHER_E2E_WEBHOOK_CLIENT_KEY_FILE=$(q "$STATE/pki/webhook-client.key")"
		echo "export USHER_E2E_ETCD=$(q "http://127.0.0.1:$ETCD_PORT")"
		echo "export USHER_E2E_KCM_SA_CREDENTIALS=$(q "${USHER_E2E_KCM_SA_CREDENTIALS:-true}")"
		echo "export USHER_E2E_KUBECTL=$(q "$BIN/kubectl")"
		for u in "${USERS[@]}"; do
			U=$(echo "$u" | tr '[:lower:]' '[:upper:]')
			echo "export USHER_E2E_KUBECONFIG_$U=$(q "$STATE/kubeconfig/$u")"
		done
		echo "export KUBECONFIG=$(q "$STATE/kubeconfig/admin")"
	} >"$f"
	mv "$f" "$STATE/env"
}

# ------------------------------------------------------------------ commands

running() {
	[ -f "$STATE/env" ] && alive etcd && alive kube-apiserver && alive kube-controller-manager || return 1
	local server tok
	server=$(sed -n "s/^export USHER_E2E_SERVER='\(.*\)'$/\1/p" "$STATE/env")
	tok=$(grep ',admin,' "$STATE/auth/tokens.csv" | cut -d, -f1)
	[ "$(curl -fsS -m 10 --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer $tok" "$server/readyz" 2>/dev/null)" = ok ]
}

cmd_down() {
	[ -d "$STATE" ] || return 0
	stop watchdog
	stop kube-controller-manager
	stop kube-apiserver
	stop etcd
	rm -f "$STATE/env"
}

cmd_up() {
	case ${USHER_E2E_KCM_SA_CREDENTIALS:-true} in
	true | false) ;;
	*) die "USHER_E2E_KCM_SA_CREDENTIALS must be true or false, not '$USHER_E2E_KCM_SA_CREDENTIALS'" ;;
	esac
	if running; then
		if grep -qF "USHER_E2E_KCM_SA_CREDENTIALS='${USHER_E2E_KCM_SA_CREDENTIALS:-true}'" "$STATE/env" &&
			grep -q USHER_E2E_WEBHOOK_CLIENT_CA_FILE "$STATE/env"; then
			log "already up ($STATE)"
			return 0
		fi
		log "up, but with other controller credentials or without a webhook client CA: restarting"
	fi
	install_packages
	build_binaries
	cmd_down
	mkdir -p "$STATE"
	rm -rf "$STATE/pki" "$STATE/auth" "$STATE/kubeconfig" "$STATE/logs" "$STATE/etcd"
	UP_DONE=
	trap 'if [ -z "$UP_DONE" ]; then log "up failed; stopping what was started"; cmd_down; fi' EXIT
	local t0=$SECONDS
	# Started first, so that even an owner killed in the middle of `up`
	# leaves nothing running.
	if [ -n "${USHER_E2E_OWNER_PID:-}" ]; then
		launch watchdog bash "$SELF" watch "$USHER_E2E_OWNER_PID" "$STATE/"
	fi
	gen_pki
	gen_tokens
	write_audit_policy
	write_admission_config
	# Generous deadlines: on a loaded machine each start may take long,
	# and a poll returns as soon as the process is healthy.
	start etcd 120 etcd_ok etcd_args
	# Ports are known only now: write the kubeconfigs before the apiserver so
	# they exist by the time it is healthy.
	API_PORT=
	apiserver_args_then_kubeconfigs() {
		apiserver_args
		local u
		for u in "${USERS[@]}"; do
			write_kubeconfig "$u" "$u" "${TOKEN[$u]}"
		done
		write_kubeconfig kube-controller-manager system:kube-controller-manager "${TOKEN[system:kube-controller-manager]}"
	}
	start kube-apiserver 180 apiserver_ok apiserver_args_then_kubeconfigs
	retry 120 bootstrap
	start kube-controller-manager 180 kcm_ok kcm_args
	write_env
	UP_DONE=1
	log "up in $((SECONDS - t0))s: $SERVER (state and logs in $STATE)"
}

# watch PID STATE: run `down` once PID is gone; stop watching when `down`
# ran by other means (it removes the watchdog's pid file). STATE is on the
# command line so that `alive` recognises the watchdog as this state dir's.
cmd_watch() {
	local owner=$1
	while kill -0 "$owner" 2>/dev/null; do
		sleep 1
		[ "$(cat "$(pid_file watchdog)" 2>/dev/null)" = "$$" ] || exit 0
	done
	log "owner process $owner is gone; taking the cluster down"
	rm -f "$(pid_file watchdog)"
	exec 9>"$STATE.lock"
	flock 9
	cmd_down
}

main() {
	local cmd=${1:-}
	case $cmd in
	up | down | clean)
		mkdir -p "$(dirname "$STATE")"
		exec 9>"$STATE.lock"
		flock 9
		;;
	esac
	case $cmd in
	up) cmd_up ;;
	down) cmd_down ;;
	clean)
		cmd_down
		rm -rf "$STATE"
		rm -f "$STATE.lock"
		;;
	env)
		[ -f "$STATE/env" ] || die "no cluster is up in $STATE (run: hack/e2e-cluster.sh up)"
		cat "$STATE/env"
		;;
	status)
		if running; then
			log "up: $(sed -n "s/^export USHER_E2E_SERVER='\(.*\)'$/\1/p" "$STATE/env") ($STATE)"
		else
			log "down ($STATE)"
			exit 1
		fi
		;;
	build)
		install_packages
		build_binaries
		;;
	watch)
		[ $# -ge 2 ] || die "usage: $0 watch PID [STATE]"
		cmd_watch "$2"
		;;
	*)
		sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
}

main "$@"
