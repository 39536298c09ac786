package server

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// BufferedWriter batches log and audit lines and never makes its caller wait
// for w, so a stalled log pipe holds no review up. Lines reach w at 64 KiB,
// every interval and on Close; past MaxPending they are dropped and counted.
type BufferedWriter struct {
	w       io.Writer
	mu      sync.Mutex // guards pending
	pending []byte
	out     sync.Mutex // one write to w at a time
	dropped atomic.Uint64
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// MaxPending bounds the bytes a BufferedWriter holds.
const MaxPending = 8 << 20

// NewBufferedWriter buffers writes to w and flushes them every interval
// until Close.
func NewBufferedWriter(w io.Writer, interval time.Duration) *BufferedWriter {
	b := &BufferedWriter{w: w, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
			case <-b.kick:
			case <-b.stop:
				return
			}
			_ = b.Flush()
		}
	}()
	return b
}

// Write keeps a copy of p for the next flush, or drops it.
func (b *BufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	if len(b.pending)+len(p) > MaxPending {
		b.mu.Unlock()
		b.dropped.Add(1)
		return len(p), nil
	}
	b.pending = append(b.pending, p...)
	full := len(b.pending) >= 64<<10
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// Flush writes what is pending to w.
func (b *BufferedWriter) Flush() error {
	b.out.Lock()
	defer b.out.Unlock()
	b.mu.Lock()
	p := b.pending
	b.pending = nil
	b.mu.Unlock()
	if len(p) == 0 {
		return nil
	}
	_, err := b.w.Write(p)
	return err
}

// Dropped is the number of writes dropped.
func (b *BufferedWriter) Dropped() uint64 { return b.dropped.Load() }

// Close stops the periodic flush and flushes what is left.
func (b *BufferedWriter) Close() error {
	close(b.stop)
	<-b.done
	return b.Flush()
}
