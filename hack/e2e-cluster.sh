#!/usr/bin/env bash
# e2e-cluster.sh — a real Kubernetes control plane on 127.0.0.1 for usher's
# end-to-end tests: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler; KWOK playing the kubelet of fake nodes (no containers run);
# Kueue's controller with its CRDs and webhooks. Pods that do not tolerate
# the fake nodes' taint stay Pending, which is enough to see what admission
# did to them; Jobs Kueue admits run to completion (docs/e2e.md).
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
# kube-controller-manager listens on none. Kueue's controller also needs a
# certificate in /etc/kueue/metrics/certs, installed once (as root).
set -euo pipefail

KUBE_VERSION=v1.37.2
# Bump when the way binaries are built changes, to force a rebuild.
BUILD_REV=3
USERS=(admin alice bob carol ext)
declare -A TOKEN # user -> bearer token, filled by gen_tokens

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SELF="$ROOT/hack/e2e-cluster.sh"
TOOLS="$ROOT/hack/tools"
CACHE=${USHER_E2E_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/usher-e2e}
STATE=${USHER_E2E_STATE:-$CACHE/cluster}
BIN="$CACHE/kube"
KWOK="$CACHE/kwok"
KUEUE="$CACHE/kueue"

log() { printf '[e2e-cluster] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- installing

# shellcheck source=root.sh
source "$(dirname "${BASH_SOURCE[0]}")/root.sh"

install_packages() {
	local pkgs=()
	command -v openssl >/dev/null || pkgs+=(openssl)
	command -v curl >/dev/null || pkgs+=(curl ca-certificates)
	[ ${#pkgs[@]} -gt 0 ] || return 0
	command -v apt-get >/dev/null || die "missing ${pkgs[*]} and no apt-get to install them"
	log "installing ${pkgs[*]}"
	apt_install "${pkgs[@]}" || die "apt-get install ${pkgs[*]} failed"
}

# Kueue's controller reads a certificate for its metrics endpoint from this
# fixed path whenever its internal certificate management is off, as here
# (kueue_args), even with the endpoint off: install a throwaway
# self-signed pair there once (root needed; nothing uses it).
KUEUE_METRICS_CERTS=/etc/kueue/metrics/certs
install_kueue_metrics_cert() {
	[ -r "$KUEUE_METRICS_CERTS/tls.crt" ] && [ -r "$KUEUE_METRICS_CERTS/tls.key" ] && return 0
	log "installing a throwaway certificate in $KUEUE_METRICS_CERTS for Kueue's controller"
	local tmp
	tmp=$(mktemp -d)
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 -subj /CN=usher-e2e-kueue-metrics \
		-keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
	chmod 644 "$tmp/tls.key" "$tmp/tls.crt"
	as_root sh -c "mkdir -p $KUEUE_METRICS_CERTS && cp $tmp/tls.crt $tmp/tls.key $KUEUE_METRICS_CERTS/"
	rm -rf "$tmp"
}

# ------------------------------------------------------------------ building

# Each of hack/tools/etcd, kube, kwok and kueue is a Go module of its own
# that pins one upstream project; build_tool NAME builds its binaries (and
# copies the manifests `up` needs from the module) into $CACHE/NAME once. A
# stamp of the module's go.mod and go.sum, the Go version and BUILD_REV says
# when to rebuild; the stamp is written last and the directory is swapped in
# whole, so a directory with a stamp is complete.
build_tool() {
	local name=$1 mod="$TOOLS/$1" dir="$CACHE/$1" stamp
	stamp=$({
		echo "rev $BUILD_REV"
		go version
		cat "$mod/go.mod" "$mod/go.sum"
	} | sha256sum | cut -d' ' -f1)
	[ "$(cat "$dir/stamp" 2>/dev/null)" != "$stamp" ] || return 0
	log "building $name into $dir (a cold build takes minutes on 2 cores; later runs use the cache)"
	local start=$SECONDS tmp="$dir.tmp.$$"
	rm -rf "$tmp" && mkdir -p "$tmp"
	(cd "$mod" && "build_$name" "$tmp") || { rm -rf "$tmp"; die "building $name failed"; }
	echo "$stamp" >"$tmp/stamp"
	rm -rf "$dir" && mv "$tmp" "$dir"
	log "built $name in $((SECONDS - start))s"
}

# mod_dir MODULE: where the module (of the current directory's build list)
# is in the module cache, once a build has downloaded it.
mod_dir() {
	local d
	d=$(go list -m -f '{{.Dir}}' "$1") && [ -n "$d" ] && echo "$d"
}

build_etcd() { go build -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3; }

build_kube() {
	local v=k8s.io/component-base/version cv=k8s.io/client-go/pkg/version p
	local minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	local ldflags="-s -w"
	for p in $v $cv; do
		ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	[ "$(go list -m -f '{{.Version}}' k8s.io/kubernetes)" = "$KUBE_VERSION" ] ||
		die "hack/tools/kube/go.mod does not pin k8s.io/kubernetes $KUBE_VERSION"
	go build -ldflags "$ldflags" -o "$1/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubectl
}

# KWOK's controller and, from its module, the Stages kwokctl gives it by
# default (node initialisation, heartbeat with leases, and the "fast" pod
# stages: Running, Succeeded for pods owned by a Job, deletion) and its
# ClusterRole with its binding to the service account it runs as.
build_kwok() {
	local src s
	go build -ldflags "-s -w" -o "$1/" sigs.k8s.io/kwok/cmd/kwok || return
	src=$(mod_dir sigs.k8s.io/kwok) || return
	for s in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
		pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
		echo "---"
		cat "$src/kustomize/stage/$s.yaml" || return
	done >"$1/stages.yaml" || return
	for s in role role_binding; do
		echo "---"
		cat "$src/kustomize/rbac/$s.yaml" || return
	done >"$1/rbac.yaml"
}

# Kueue's controller manager and, from its module, its CRDs, its webhook
# configurations, and its roles with their bindings to the service account
# it runs as (in kueue-system, named kueue-*, as its release's kustomization
# names them).
build_kueue() {
	local src s
	go build -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$(go list -m -f '{{.Version}}' sigs.k8s.io/kueue)" \
		-o "$1/" sigs.k8s.io/kueue/cmd/kueue || return
	src=$(mod_dir sigs.k8s.io/kueue) || return
	mkdir -p "$1/crds"
	cp "$src"/config/components/crd/bases/*.yaml "$1/crds/" || return
	cp "$src/config/components/webhook/manifests.yaml" "$1/webhooks.yaml" || return
	for s in role role_binding manager_secrets_role manager_secrets_role_binding; do
		echo "---"
		sed -e 's/^\( *\)name: \(manager-\|controller-manager$\)/\1name: kueue-\2/' \
			-e 's/^\( *\)namespace: system$/\1namespace: kueue-system/' "$src/config/components/rbac/$s.yaml" || return
	done >"$1/rbac.yaml" || return
	sed -n 's|^- path: patches/webhook_in_\(.*\)\.yaml$|\1.kueue.x-k8s.io|p' \
		"$src/config/components/crd/kustomization.yaml" >"$1/conversion-crds"
}

build_binaries() {
	command -v go >/dev/null || die "go is not on PATH"
	mkdir -p "$CACHE"
	# One build at a time per cache, even when several clusters start together.
	exec 8>"$CACHE/build.lock"
	flock 8
	build_tool etcd
	build_tool kube
	build_tool kwok
	build_tool kueue
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

# poll SECONDS WHAT CHECK...: run CHECK every half second until it succeeds;
# after SECONDS, say what did not happen and fail.
poll() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || { log "gave up waiting for $what"; return 1; }
		sleep 0.5
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
		# The aggregation layer's front proxy: kube-apiserver presents
		# front-proxy-client.crt to aggregated API servers and names the
		# user in X-Remote-* headers (usher serve --aggregated-api).
		openssl req -x509 -newkey rsa:2048 -nodes -days 30 -sha256 \
			-keyout front-proxy-ca.key -out front-proxy-ca.crt -subj "/CN=usher-e2e-front-proxy-ca" 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -sha256 -keyout front-proxy-client.key -out front-proxy-client.csr \
			-subj "/CN=front-proxy-client" 2>/dev/null
		openssl x509 -req -in front-proxy-client.csr -CA front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial \
			-days 30 -sha256 -extfile webhook-client.ext -out front-proxy-client.crt 2>/dev/null
		# A serving certificate for 127.0.0.1 from the cluster CA, for
		# kube-scheduler's port and Kueue's webhook (tls.crt and tls.key,
		# the names Kueue's webhook server reads from its certDir).
		mkdir -p loopback
		openssl req -newkey rsa:2048 -nodes -sha256 -keyout loopback/tls.key -out loopback/tls.csr \
			-subj "/CN=usher-e2e-loopback" 2>/dev/null
		sed 's/^subjectAltName=.*/subjectAltName=IP:127.0.0.1,DNS:localhost/' apiserver.ext >loopback/tls.ext
		openssl x509 -req -in loopback/tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
			-sha256 -extfile loopback/tls.ext -out loopback/tls.crt 2>/dev/null
		chmod 644 ca.crt apiserver.crt sa.pub webhook-client-ca.crt loopback/tls.crt
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
	system:serviceaccount:*)
		local ns=${1#system:serviceaccount:}
		echo "system:serviceaccounts,system:serviceaccounts:${ns%%:*}"
		;;
	*) echo "" ;;
	esac
}

# The components with a kubeconfig of their own and the user each acts as:
# the controller manager and the scheduler as their bootstrap users, KWOK
# and Kueue as the service accounts they run as in a cluster (the token file
# gives the user the groups the API server reports for a service account).
COMPONENTS=(kube-controller-manager kube-scheduler kwok kueue)
declare -A COMPONENT_USER=(
	[kube-controller-manager]=system:kube-controller-manager
	[kube-scheduler]=system:kube-scheduler
	[kwok]=system:serviceaccount:kube-system:kwok-controller
	[kueue]=system:serviceaccount:kueue-system:kueue-controller-manager
)

gen_tokens() {
	mkdir -p "$STATE/auth" "$STATE/kubeconfig"
	: >"$STATE/auth/tokens.csv"
	chmod 600 "$STATE/auth/tokens.csv"
	local u tok
	for u in "${USERS[@]}" "${COMPONENT_USER[@]}"; do
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
	argv=("$CACHE/etcd/etcd" --name usher-e2e --data-dir "$STATE/etcd"
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
		--requestheader-client-ca-file "$STATE/pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
		--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group
		--requestheader-extra-headers-prefix X-Remote-Extra-
		--proxy-client-cert-file "$STATE/pki/front-proxy-client.crt" --proxy-client-key-file "$STATE/pki/front-proxy-client.key"
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
		--controllers deployment-controller,replicaset-controller,replicationcontroller-controller,statefulset-controller,daemonset-controller,job-controller,cronjob-controller,ttl-after-finished-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller,node-lifecycle-controller,pod-garbage-collector-controller
		--profiling=false
		--v 1)
}
kcm_ok() {
	curl -fsS -m 10 -o /dev/null --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer ${TOKEN[admin]}" \
		"$SERVER/api/v1/namespaces/default/serviceaccounts/default"
}

kubectl_admin() { "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig/admin" "$@"; }

# kube-scheduler authenticates the callers of its port (only /readyz,
# /healthz and /livez are open to anyone) through the API server, as
# kubeadm runs it.
scheduler_args() {
	free_port
	SCHED_PORT=$PORT OWN_PORT=$PORT
	local kc="$STATE/kubeconfig/kube-scheduler"
	argv=("$BIN/kube-scheduler"
		--kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc"
		--bind-address 127.0.0.1 --secure-port "$SCHED_PORT"
		--tls-cert-file "$STATE/pki/loopback/tls.crt" --tls-private-key-file "$STATE/pki/loopback/tls.key"
		--leader-elect=false
		--profiling=false
		--v 1)
}
scheduler_ok() { [ "$(curl -fsS -m 10 --cacert "$STATE/pki/ca.crt" "https://127.0.0.1:$SCHED_PORT/readyz")" = ok ]; }

# KWOK plays the kubelet of the nodes annotated kwok.x-k8s.io/node=fake
# (create_nodes; a node a test makes stays as the API server made it:
# NotReady, tainted not-ready) with the Stages of $KWOK/stages.yaml: a node
# becomes Ready and renews its Lease, a pod bound to it becomes Running, and
# then Succeeded when a Job owns it; a deleted pod is removed. It serves
# /healthz (and a kubelet-like API) on 127.0.0.1 over HTTP. HOME is the
# state dir: kwok would also read ~/.kwok/kwok.yaml.
kwok_args() {
	free_port
	KWOK_PORT=$PORT OWN_PORT=$PORT
	mkdir -p "$STATE/kwok"
	argv=(env HOME="$STATE/kwok" "$KWOK/kwok"
		--kubeconfig "$STATE/kubeconfig/kwok"
		--config "$KWOK/stages.yaml"
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake
		--node-lease-duration-seconds 40
		--server-address "127.0.0.1:$KWOK_PORT")
}
kwok_ok() { [ "$(curl -fsS -m 10 "http://127.0.0.1:$KWOK_PORT/healthz")" = ok ]; }
kwok_prepare() { kubectl_admin apply -f "$KWOK/rbac.yaml" >/dev/null; }

# The fake nodes: KWOK_NODES nodes named kwok-node-N with the capacity
# below, labelled type=kwok and tainted (as KWOK's documentation does) so
# that only pods that tolerate the taint are scheduled there: Kueue's
# ResourceFlavor in the tests adds the toleration and the node label to the
# pods it admits, and every other pod stays Pending, as without a
# scheduler.
KWOK_NODES=2
create_nodes() {
	local i
	for ((i = 0; i < KWOK_NODES; i++)); do
		cat <<-EOF
			---
			apiVersion: v1
			kind: Node
			metadata:
			  name: kwok-node-$i
			  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i}
			  annotations: {kwok.x-k8s.io/node: fake}
			spec:
			  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
			status:
			  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
			  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
		EOF
	done | kubectl_admin apply -f - >/dev/null
}
# Ready (KWOK's heartbeat) and without the not-ready taint the API server
# gives a new node (the node lifecycle controller removes it once the node
# is Ready): a pod that tolerates only KWOK's taint can be scheduled.
nodes_ok() {
	local ready taints
	ready=$(kubectl_admin get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}') || return
	taints=$(kubectl_admin get nodes -l type=kwok -o jsonpath='{.items[*].spec.taints[*].key}') || return
	[ "$ready" = "$(printf 'True %.0s' $(seq 1 $KWOK_NODES))" ] && [[ $taints != *node.kubernetes.io/not-ready* ]]
}

# Kueue manages Jobs only in the namespaces with this label (its
# managedJobsNamespaceSelector, and the namespaceSelector of its Job
# webhooks): elsewhere a Job with a kueue.x-k8s.io/queue-name label runs as
# if Kueue were not there.
KUEUE_NS_LABEL='usher-e2e/kueue: "true"'

# Kueue's CRDs, its namespace and roles; the namespace e2e is one Kueue
# manages. The CRDs are applied server side: the Workload CRD is too large
# for the annotation a client-side apply keeps.
kueue_prepare() {
	kubectl_admin apply --server-side -f "$KUEUE/crds/" >/dev/null || return
	# (kubectl wait reports its watches' ends as errors: show them only
	# when it fails.)
	local out
	out=$(kubectl_admin wait --for condition=established --timeout 60s -f "$KUEUE/crds/" 2>&1) || { echo "$out" >&2; return 1; }
	{
		cat <<-EOF
			---
			apiVersion: v1
			kind: Namespace
			metadata:
			  name: kueue-system
			---
			apiVersion: v1
			kind: Namespace
			metadata:
			  name: e2e
			  labels: {$KUEUE_NS_LABEL}
		EOF
		cat "$KUEUE/rbac.yaml"
	} | kubectl_admin apply -f - >/dev/null
}

# Kueue runs outside the cluster: its webhook serves on 127.0.0.1 with the
# loopback certificate of the cluster CA (internal certificate management
# off), and its webhook configurations call it by URL (kueue_register).
# Its metrics endpoint is off ("0"); the health probes serve /readyz on
# 127.0.0.1, which answers ok once the webhook server runs.
kueue_args() {
	free_port
	KUEUE_HEALTH_PORT=$PORT OWN_PORT=$PORT
	free_port
	KUEUE_WEBHOOK_PORT=$PORT
	mkdir -p "$STATE/kueue"
	cat >"$STATE/kueue/config.yaml" <<-EOF
		apiVersion: config.kueue.x-k8s.io/v1beta2
		kind: Configuration
		namespace: kueue-system
		health:
		  healthProbeBindAddress: 127.0.0.1:$KUEUE_HEALTH_PORT
		metrics:
		  bindAddress: "0"
		webhook:
		  host: 127.0.0.1
		  port: $KUEUE_WEBHOOK_PORT
		  certDir: $STATE/pki/loopback
		leaderElection:
		  leaderElect: false
		internalCertManagement:
		  enable: false
		manageJobsWithoutQueueName: false
		managedJobsNamespaceSelector:
		  matchLabels:
		    $KUEUE_NS_LABEL
		integrations:
		  frameworks: [batch/job]
		featureGates:
		  VisibilityOnDemand: false
	EOF
	argv=("$KUEUE/kueue" --kubeconfig "$STATE/kubeconfig/kueue" --config "$STATE/kueue/config.yaml")
}
kueue_ok() { [ "$(curl -fsS -m 10 "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz")" = ok ]; }

# kueue_webhooks: Kueue's webhook configurations from its module
# (config/components/webhook/manifests.yaml, named as its release names
# them) calling Kueue by URL instead of through its Service, and only the
# webhooks of what it manages here: Jobs (in the namespaces with
# KUEUE_NS_LABEL) and Kueue's own kinds.
kueue_webhooks() {
	awk -v url="https://127.0.0.1:$KUEUE_WEBHOOK_PORT" -v ca="$(base64 -w0 "$STATE/pki/ca.crt")" -v nslabel="$KUEUE_NS_LABEL" '
		function flush() { if (keep) printf "%s", item; item = ""; keep = 0 }
		/^[^ ]/ { flush(); initem = /^- / }
		/^  name: (mutating|validating)-webhook-configuration$/ { sub(/name: /, "name: kueue-") }
		/^    service:$/ { insvc = 1; next }
		insvc && /^      (name|namespace): / { next }
		insvc && /^      path: / {
			insvc = 0
			path = $2
			$0 = "    url: " url path "\n    caBundle: " ca
			if (path ~ /-batch-v1-job$/) {
				keep = 1
				$0 = $0 "\n  namespaceSelector:\n    matchLabels:\n      " nslabel
			} else if (path ~ /-kueue-x-k8s-io-/) keep = 1
		}
		{ if (initem) item = item $0 "\n"; else print }
		END { flush() }
	' "$KUEUE/webhooks.yaml"
}

# Register Kueue's webhooks and the conversion webhook of its CRDs that
# serve more than one version (the CRDs its kustomization patches).
kueue_register() {
	kueue_webhooks | kubectl_admin apply -f - >/dev/null || return
	local crd conv
	conv=$(printf '{"spec":{"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:%s/convert","caBundle":"%s"}}}}}' \
		"$KUEUE_WEBHOOK_PORT" "$(base64 -w0 "$STATE/pki/ca.crt")")
	while read -r crd; do
		kubectl_admin patch crd "$crd" --type merge -p "$conv" >/dev/null || return
	done <"$KUEUE/conversion-crds"
}
# Kueue's Job webhook acts: a dry-run Job with a queue name in a namespace
# Kueue manages comes back suspended.
kueue_suspends() {
	[ "$(kubectl_admin create --dry-run=server -o jsonpath='{.spec.suspend}' -f - 2>/dev/null <<-'EOF'
		apiVersion: batch/v1
		kind: Job
		metadata:
		  name: kueue-probe
		  namespace: e2e
		  labels: {kueue.x-k8s.io/queue-name: probe}
		spec:
		  template:
		    spec:
		      restartPolicy: Never
		      containers: [{name: c, image: x}]
	EOF
	)" = true ]
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
		echo "export USHER_E2E_FRONT_PROXY=1"
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
	[ -f "$STATE/env" ] && alive etcd && alive kube-apiserver || return 1
	local c
	for c in "${COMPONENTS[@]}"; do
		alive "$c" || return 1
	done
	local server tok
	server=$(sed -n "s/^export USHER_E2E_SERVER='\(.*\)'$/\1/p" "$STATE/env")
	tok=$(grep ',admin,' "$STATE/auth/tokens.csv" | cut -d, -f1)
	[ "$(curl -fsS -m 10 --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer $tok" "$server/readyz" 2>/dev/null)" = ok ]
}

cmd_down() {
	[ -d "$STATE" ] || return 0
	stop watchdog
	stop kueue
	stop kwok
	stop kube-scheduler
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
			grep -q USHER_E2E_WEBHOOK_CLIENT_CA_FILE "$STATE/env" && grep -q USHER_E2E_FRONT_PROXY "$STATE/env"; then
			log "already up ($STATE)"
			return 0
		fi
		log "up, but with other controller credentials or without a webhook client CA: restarting"
	fi
	install_packages
	install_kueue_metrics_cert
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
		local u c
		for u in "${USERS[@]}"; do
			write_kubeconfig "$u" "$u" "${TOKEN[$u]}"
		done
		for c in "${COMPONENTS[@]}"; do
			write_kubeconfig "$c" "${COMPONENT_USER[$c]}" "${TOKEN[${COMPONENT_USER[$c]}]}"
		done
	}
	start kube-apiserver 180 apiserver_ok apiserver_args_then_kubeconfigs
	retry 120 bootstrap
	start kube-controller-manager 180 kcm_ok kcm_args
	start kube-scheduler 180 scheduler_ok scheduler_args
	retry 120 kwok_prepare
	start kwok 180 kwok_ok kwok_args
	retry 60 create_nodes
	poll 180 "the KWOK nodes to be Ready and schedulable" nodes_ok
	retry 120 kueue_prepare
	start kueue 180 kueue_ok kueue_args
	retry 60 kueue_register
	poll 120 "Kueue's Job webhook to suspend a queued Job" kueue_suspends
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
