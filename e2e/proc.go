//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux for every architecture Go supports there).
const clockTicks = 100

// ProcessCPU returns the CPU time (user + system) process pid has used so
// far, from /proc/PID/stat, at a resolution of 10ms.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("e2e: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("e2e: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("e2e: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// ClusterPID returns the pid of one of the cluster's processes (etcd,
// kube-apiserver, kube-controller-manager) from its state directory.
func (c *Cluster) ClusterPID(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.StateDir, "pids", name+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// EstablishedTo returns the remote addresses of the established IPv4 TCP
// connections whose local port is port (from /proc/net/tcp): for usher's
// port, the connections the API server keeps to it.
func EstablishedTo(port int) ([]string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var remotes []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st ...; addresses are HEXIP:HEXPORT.
		if len(fields) < 4 || fields[3] != "01" {
			continue
		}
		_, lport, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(lport, 16, 16); err != nil || int(p) != port {
			continue
		}
		remotes = append(remotes, fields[2])
	}
	return remotes, sc.Err()
}
