//go:build !linux

package benchcpu

func threadNanos() int64 { return -1 }
