# root.sh — sourced by the scripts that install Debian packages: as_root
# runs a command as root (directly, or through sudo without a password),
# or stops through the caller's die when it cannot; apt_install PKG...
# installs packages with apt-get as root (after an update), non-zero when
# it fails. Nothing here prompts.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo -n "$@" || die "need root to run: $* (run it yourself, then retry)"
	else
		die "need root to run: $*"
	fi
}

apt_install() {
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" </dev/null
}
